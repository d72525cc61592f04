#include "core/dist/data_parallel.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <chrono>
#include <stdexcept>

#include "core/dist/gradient_buckets.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/shape_ops.hpp"

namespace ctrax::dist {

namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// A number that differs when any weight differs (position-weighted, so a permutation shows too).
double fingerprint(const std::vector<Tensor>& tensors) {
  double f = 0;
  for (std::size_t t = 0; t < tensors.size(); ++t) {
    const std::vector<double> v = tensors[t].to_doubles();
    for (std::size_t i = 0; i < v.size(); ++i) f += v[i] * static_cast<double>(1 + (i + 7 * t) % 101);
  }
  return f;
}

}  // namespace

DataParallel::DataParallel(std::shared_ptr<Communicator> comm, bool overlap_gradient_sum)
    : comm_(comm ? std::move(comm) : single_process()), overlap_(overlap_gradient_sum) {}

void DataParallel::check_divides(const Stack& batch, const std::string& what) const {
  const int K = size();
  if (batch.empty() || batch[0].rank() < 1)
    throw std::invalid_argument(fmt::format("Loop: {}'s batches must be (inputs..., targets, weights) with a batch axis, got {}",
                                            what, signatures(batch)));
  const std::int64_t B = batch[0].dim(0);
  for (const Tensor& x : batch)
    if (x.rank() < 1 || x.dim(0) != B)
      throw std::invalid_argument(fmt::format("Loop: {}'s batch items must share their first (batch) axis, got {}",
                                              what, signatures(batch)));
  if (B % K != 0)
    throw std::invalid_argument(fmt::format(
        "Loop: {}'s global batch of {} rows does not divide among {} processes: give a batch size that is a "
        "multiple of {} (each process takes B/{} rows)", what, B, K, K, K));
}

BatchPart DataParallel::part(const Stack& global, const Rng& rng) const {
  const int K = size();
  if (K == 1) return {global, 1.0, rng};
  BatchPart p;
  const std::int64_t rows = global[0].dim(0) / K;
  for (const Tensor& x : global) p.rows.push_back(slice(x, 0, rank() * rows, (rank() + 1) * rows));
  // The weights are the batch's last item (core/train/task.hpp); a batch without them weighs its rows alike.
  p.share = 1.0 / K;
  if (global.size() >= 3) {
    double total = 0, mine = 0;
    for (double w : global.back().to_doubles()) total += w;
    for (double w : p.rows.back().to_doubles()) mine += w;
    if (total > 0) p.share = mine / total;
  }
  p.rng = detail::with_rows(rng, rank() * rows, rows);
  return p;
}

BatchPart DataParallel::padded_part(const Stack& global, const Rng& rng) const {
  const int K = size();
  if (K == 1 || global.size() < 3 || global[0].rank() < 1 || global[0].dim(0) % K == 0) return part(global, rng);
  // Copies of row 0 with weight 0 (the last item) count for nothing in a weighted mean.
  const std::int64_t extra = K - global[0].dim(0) % K;
  Stack padded;
  for (std::size_t i = 0; i < global.size(); ++i) {
    const Tensor& x = global[i];
    std::vector<Tensor> parts{x};
    Shape pad_shape = x.shape();
    pad_shape[0] = extra;
    if (i + 1 == global.size()) parts.push_back(Tensor::zeros(pad_shape, x.dtype()));
    else for (std::int64_t r = 0; r < extra; ++r) parts.push_back(slice(x, 0, 0, 1));
    padded.push_back(concatenate(parts, 0));
  }
  return part(padded, rng);
}

LossAndGradients DataParallel::loss_and_gradients(const BatchPart& part,
                                                  const std::function<Tensor(const Stack&)>& loss_of,
                                                  const std::vector<Tensor>& weights) const {
  LossAndGradients out;
  if (size() == 1) {
    const Tensor loss = loss_of(part.rows);
    out.loss = loss.item();
    out.gradients = grad(loss, weights);
    return out;
  }
  // This process's loss and gradients weighted by its share, summed over the processes: the whole
  // batch's (a process whose rows weigh nothing adds zeros).
  GradientBuckets buckets(*comm_, weights);
  const auto add = [&](std::size_t i, const Tensor& g) { buckets.add(i, g, part.share); };
  auto backward_end = Clock::now();
  if (part.share > 0) {
    const Tensor loss = loss_of(part.rows);
    out.loss = loss.item() * part.share;
    if (overlap_) {
      grad(loss, weights, {.on_ready = add});
    } else {
      const std::vector<Tensor> mine = grad(loss, weights);
      backward_end = Clock::now();
      for (std::size_t i = mine.size(); i-- > 0;) add(i, mine[i]);   // last layers first, as the tape does
    }
  } else {
    for (std::size_t i = 0; i < weights.size(); ++i)
      add(i, Tensor::zeros(weights[i].shape(), weights[i].dtype()));
  }
  if (overlap_ || part.share <= 0) backward_end = Clock::now();
  out.gradients = buckets.finish();
  out.loss = sum({out.loss})[0];
  out.sum_seconds = seconds_since(backward_end);
  return out;
}

std::vector<double> DataParallel::sum(std::vector<double> values) const {
  if (size() == 1 || values.empty()) return values;
  std::vector<Tensor> t{Tensor::from_doubles(values, {static_cast<std::int64_t>(values.size())}, DType::float64)};
  comm_->all_reduce(t, Reduce::sum);
  return t[0].to_doubles();
}

bool DataParallel::any(bool asked) const { return sum({asked ? 1.0 : 0.0})[0] > 0; }

void DataParallel::check_same(const std::vector<Tensor>& weights) const {
  if (size() == 1) return;
  std::vector<Tensor> lead_print{Tensor::scalar(fingerprint(weights), DType::float64)};
  const double mine = lead_print[0].item();
  comm_->broadcast(lead_print, 0);
  std::vector<double> differs(static_cast<std::size_t>(size()), 0.0);
  differs[static_cast<std::size_t>(rank())] = mine == lead_print[0].item() ? 0.0 : 1.0;
  const std::vector<double> tally = sum(differs);
  std::vector<int> which;
  for (int r = 0; r < size(); ++r)
    if (tally[static_cast<std::size_t>(r)] > 0) which.push_back(r);
  if (!which.empty())
    throw std::runtime_error(fmt::format(
        "Loop: process{} {} built other initial weights than process 0: every process must build the same model "
        "with the same seed", which.size() > 1 ? "es" : "", fmt::join(which, ", ")));
}

void DataParallel::from_lead(std::vector<Tensor>& tensors) const {
  if (size() > 1) comm_->broadcast(tensors, 0);
}

}  // namespace ctrax::dist
