#include "core/decode/sampling.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>

#include "core/decode/internal/packed_weights.hpp"
#include "core/decode/internal/token_program.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::decode {

Tensor column(const std::vector<std::int32_t>& ids) {
  Tensor t = Tensor::empty({static_cast<std::int64_t>(ids.size()), 1}, DType::int32);
  std::copy(ids.begin(), ids.end(), t.data<std::int32_t>());
  return t;
}

namespace {

bool has_predict_layer(const Layer& layer) {
  if (layer.mode() == Mode::predict) return true;
  for (const auto& s : layer.sublayers())
    if (s && has_predict_layer(*s)) return true;
  return false;
}

}  // namespace

void start_decoding(Layer& model, const Tensor& inputs, std::int64_t rows) {
  if (!has_predict_layer(model))
    throw std::invalid_argument(fmt::format(
        "decoding needs a predict-mode model (KV caches); no layer of {} is in predict mode. "
        "Build it with .mode = Mode::predict and load the trained weights into it",
        model.display_name()));
  const ShapeDtype token{{rows, 1}, DType::int32};
  if (model.n_in() > 1) {
    if (!inputs.defined())
      throw std::invalid_argument(fmt::format("{} takes {} inputs: decoding it needs `inputs`",
                                              model.display_name(), model.n_in()));
    model.reset_state({ShapeDtype{inputs.shape(), inputs.dtype()}, token});
  } else {
    model.reset_state({token});
  }
}

Tensor next_token_log_probs(Layer& model, const Tensor& inputs, const Tensor& tokens) {
  NoGrad no_grad;
  Tensor logits;   // one parallel region for the whole token (runtime.hpp, in_one_region)
  in_one_region([&] { logits = model.n_in() > 1 ? model(Stack{inputs, tokens})[0] : model(Stack{tokens})[0]; });
  if (logits.rank() != 3)
    throw std::invalid_argument(fmt::format("decoding expects (B, L, vocab) logits, got {}",
                                            logits.signature()));
  const std::int64_t L = logits.dim(1);
  const Tensor last = reshape(slice(logits, 1, L - 1, L), {logits.dim(0), logits.dim(2)});
  return log_softmax(last.to(DType::float64), -1);
}

namespace {

// The least log-probability inside the nucleus of probability p at temperature T: the tokens by
// falling logp, their probabilities softmax(logp / T) summed until they reach p. (Tokens tied with
// the last one taken stay in, as top_k keeps its ties.)
double nucleus_threshold(const double* logp, std::int64_t V, double T, double p) {
  std::vector<double> sorted(logp, logp + V);
  std::sort(sorted.begin(), sorted.end(), std::greater<>());
  const double top = sorted.front();
  double total = 0;
  for (const double l : sorted) total += std::exp((l - top) / T);
  double mass = 0;
  for (const double l : sorted) {
    mass += std::exp((l - top) / T) / total;
    if (mass >= p) return l;
  }
  return sorted.back();   // rounding left the sum a hair below p: every token
}

// The token to emit for one row of log-probabilities.
std::int32_t pick(const double* logp, std::int64_t V, const SampleOptions& o, const Rng& noise) {
  double threshold = -std::numeric_limits<double>::infinity();
  if (o.top_k > 0 && o.top_k < V) {
    std::vector<double> sorted(logp, logp + V);
    std::nth_element(sorted.begin(), sorted.begin() + (o.top_k - 1), sorted.end(), std::greater<>());
    threshold = sorted[static_cast<std::size_t>(o.top_k - 1)];
  }
  if (o.top_p < 1 && o.temperature > 0) threshold = std::max(threshold, nucleus_threshold(logp, V, o.temperature, o.top_p));
  std::int64_t best = 0;
  double best_score = -std::numeric_limits<double>::infinity();
  for (std::int64_t v = 0; v < V; ++v) {
    if (logp[v] < threshold) continue;
    double score = logp[v];
    if (o.temperature > 0) {
      // Gumbel noise −log(−log u), u uniform in (0, 1) from 53 random bits.
      const double u = (static_cast<double>(noise.bits(static_cast<std::uint64_t>(v)) >> 11) + 0.5) /
                       9007199254740992.0;
      score = logp[v] / o.temperature - std::log(-std::log(u));
    }
    if (score > best_score) {
      best_score = score;
      best = v;
    }
  }
  return static_cast<std::int32_t>(best);
}

}  // namespace

Tensor autoregressive_sample(Layer& model, const Tensor& inputs, std::int64_t batch_size,
                             const SampleOptions& o) {
  if (!(o.temperature >= 0))
    throw std::invalid_argument(fmt::format("autoregressive_sample: temperature must be 0 or more, got {}", o.temperature));
  if (!(o.top_p > 0 && o.top_p <= 1))
    throw std::invalid_argument(fmt::format("autoregressive_sample: top_p must be in (0, 1], got {}", o.top_p));
  if (o.max_length < 1) throw std::invalid_argument("autoregressive_sample: max_length < 1");
  const bool lm = model.n_in() == 1;
  if (inputs.defined() && (inputs.rank() != 2 || inputs.dtype() != DType::int32))
    throw std::invalid_argument(fmt::format(
        "autoregressive_sample: inputs must be (B, L) int32 tokens, got {}", inputs.signature()));
  const std::int64_t B = inputs.defined() ? inputs.dim(0) : batch_size;
  start_decoding(model, inputs, B);

  Tensor tokens = column(std::vector<std::int32_t>(static_cast<std::size_t>(B), o.start_id));
  if (lm && inputs.defined()) tokens = concatenate({tokens, inputs}, 1);  // the prompt, one chunk
  std::vector<std::vector<std::int32_t>> out(static_cast<std::size_t>(B));
  std::vector<bool> done(static_cast<std::size_t>(B), false);
  const Rng rng(o.seed);
  std::int64_t T = 0;
  // One parallel region for the whole sequence, not one per token (next_token_log_probs runs in
  // it): between two tokens the other threads wait spinning, ready for the next token's first
  // product; a region closed and opened again each token made every token slower
  // (docs/11_performance.md). And every one-row product reads its weight from panels packed at
  // the first token (internal/packed_weights.hpp): the same bits, read faster.
  const PackedWeights packed(model, o.pack_weights);
  // A language model's rows: after the prompt, each token runs as one team job, the program
  // lowered from the model (internal/token_program.hpp) — the tree's numbers; the tree runs
  // whatever the program declines.
  const std::unique_ptr<TokenProgram> program = lm ? TokenProgram::compile(model, B) : nullptr;
  in_one_region([&] {
    for (; T < o.max_length; ++T) {
      const Tensor logp = next_token_log_probs(program.get(), model, inputs, tokens);
      const std::int64_t V = logp.dim(1);
      const Rng step_rng = rng.fold_in(static_cast<std::uint64_t>(T));
      std::vector<std::int32_t> next(static_cast<std::size_t>(B));
      for (std::int64_t b = 0; b < B; ++b) {
        const std::int32_t id =
            done[b] ? o.pad_id
                    : pick(logp.data<double>() + b * V, V, o, step_rng.fold_in(static_cast<std::uint64_t>(b)));
        next[b] = id;
        out[b].push_back(id);
        if (id == o.eos_id && o.eos_id >= 0) done[b] = true;
      }
      tokens = column(next);
      if (std::all_of(done.begin(), done.end(), [](bool d) { return d; })) {
        ++T;
        break;
      }
    }
  });
  Tensor result = Tensor::empty({B, T}, DType::int32);
  for (std::int64_t b = 0; b < B; ++b)
    std::copy(out[b].begin(), out[b].begin() + T, result.data<std::int32_t>() + b * T);
  return result;
}

}  // namespace ctrax::decode
