#include "core/train/sm3.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "core/engine/broadcast.hpp"
#include "core/engine/flush_denormals.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/dispatch.hpp"

namespace ctrax::train {
namespace {

class SM3Optimizer : public Optimizer {
 public:
  explicit SM3Optimizer(const SM3Config& c) : Optimizer("SM3", c.learning_rate, c.clip_grad_norm), c_(c) {
    if (!(c.momentum >= 0 && c.momentum < 1))
      throw std::invalid_argument(fmt::format("SM3: momentum must be in [0, 1), got {}", c.momentum));
  }

 protected:
  std::vector<Slot> init_slots(const Tensor& w) const override {
    std::vector<Slot> slots{{"m", zero_slot(w)}};
    if (w.rank() <= 1) {
      slots.push_back({"v0", zero_slot(w)});
    } else {
      for (std::int64_t k = 0; k < w.rank(); ++k) slots.push_back({fmt::format("v{}", k), zero_slot(w, {w.dim(k)})});
    }
    return slots;
  }

  void update_weight(std::int64_t, double lr, Tensor& weight, const Tensor& g, double g_scale,
                     std::vector<Slot>& slots) const override {
    const FlushDenormals flush;   // the momentum of a weight without gradient decays through the subnormals
    dispatch_float(weight.dtype(), [&]<class T>(T) {
      if (weight.rank() <= 1) diagonal<T>(lr, weight, g, g_scale, slots);
      else sketched<T>(lr, weight, g, g_scale, slots);
    }, "SM3");
  }

 private:
  // m ← μ m + (1 − μ) · p,  w ← w − lr · m: the step both forms end with, for the preconditioned p.
  template <class T>
  void step(T& w, T& m, double p, double lr) const {
    m = static_cast<T>(c_.momentum * static_cast<double>(m) + (1 - c_.momentum) * p);
    w = static_cast<T>(static_cast<double>(w) - lr * static_cast<double>(m));
  }

  // A vector or a scalar: its own accumulator per weight (Adagrad).
  template <class T>
  void diagonal(double lr, Tensor& weight, const Tensor& grad, double g_scale, std::vector<Slot>& slots) const {
    T* w = weight.data<T>();
    T* m = slots[0].value.data<T>();
    T* v = slots[1].value.data<T>();
    const T* g = grad.data<T>();
    const std::int64_t n = weight.numel();
    parallel_chunks(n, n >= kParallelElements, [&](std::int64_t i0, std::int64_t i1) {
      for (std::int64_t i = i0; i < i1; ++i) {
        const double gi = g_scale * static_cast<double>(g[i]);
        v[i] = static_cast<T>(static_cast<double>(v[i]) + gi * gi);
        step(w[i], m[i], v[i] > 0 ? gi / std::sqrt(static_cast<double>(v[i])) : 0.0, lr);
      }
    });
  }

  // Rank r ≥ 2, seen as rows of the last axis: a row's accumulators along the first r − 1 axes
  // give one minimum for the whole row, met by each column's. The new accumulators are gathered
  // apart — each chunk of rows its own maxima, merged after (a maximum is the same in any order) —
  // and written after the pass, which reads the old ones throughout.
  template <class T>
  void sketched(double lr, Tensor& weight, const Tensor& grad, double g_scale, std::vector<Slot>& slots) const {
    const auto r = static_cast<std::size_t>(weight.rank());
    const std::int64_t C = weight.dim(-1), rows = weight.numel() / std::max<std::int64_t>(C, 1);
    T* w = weight.data<T>();
    T* m = slots[0].value.data<T>();
    const T* g = grad.data<T>();
    std::vector<const T*> v(r);
    std::vector<std::vector<double>> next(r);
    for (std::size_t k = 0; k < r; ++k) {
      v[k] = slots[k + 1].value.data<T>();
      next[k].assign(static_cast<std::size_t>(weight.dim(static_cast<std::int64_t>(k))), 0.0);   // a ≥ 0
    }
    std::mutex merge;
    parallel_chunks(rows, weight.numel() >= kParallelElements, [&](std::int64_t r0, std::int64_t r1) {
      std::vector<std::vector<double>> top(r);
      for (std::size_t k = 0; k < r; ++k) top[k].assign(next[k].size(), 0.0);
      std::vector<std::int64_t> index(r - 1);   // row r0's index along the first r − 1 axes
      for (std::int64_t k = static_cast<std::int64_t>(r) - 2, rest = r0; k >= 0; --k) {
        index[static_cast<std::size_t>(k)] = rest % weight.dim(k);
        rest /= weight.dim(k);
      }
      const T* v_last = v[r - 1];
      double* top_last = top[r - 1].data();
      std::vector<double> row_a(static_cast<std::size_t>(C));   // the row's new accumulators
      for (std::int64_t row = r0; row < r1; ++row) {
        double row_min = static_cast<double>(v[0][index[0]]);
        for (std::size_t k = 1; k + 1 < r; ++k) row_min = std::min(row_min, static_cast<double>(v[k][index[k]]));
        // The step in a loop of its own, the maxima in the next: together, the maxima's running
        // reduction kept the compiler from vectorising the square roots and divisions.
        T* const wr = w + row * C;
        T* const mr = m + row * C;
        const T* const gr = g + row * C;
        double* const ar = row_a.data();
        for (std::int64_t c = 0; c < C; ++c) {
          const double gi = g_scale * static_cast<double>(gr[c]);
          const double a = std::min(row_min, static_cast<double>(v_last[c])) + gi * gi;
          step(wr[c], mr[c], a > 0 ? gi / std::sqrt(a) : 0.0, lr);
          ar[c] = a;
        }
        double lanes[8] = {0, 0, 0, 0, 0, 0, 0, 0};   // the row's maximum, in eight lanes (a maximum in any order)
        std::int64_t c = 0;
        for (; c + 8 <= C; c += 8)
          for (int l = 0; l < 8; ++l) {
            lanes[l] = std::max(lanes[l], ar[c + l]);
            top_last[c + l] = std::max(top_last[c + l], ar[c + l]);
          }
        for (; c < C; ++c) {
          lanes[0] = std::max(lanes[0], ar[c]);
          top_last[c] = std::max(top_last[c], ar[c]);
        }
        const double row_max = *std::max_element(lanes, lanes + 8);
        for (std::size_t k = 0; k + 1 < r; ++k) {
          double& t = top[k][static_cast<std::size_t>(index[k])];
          t = std::max(t, row_max);
        }
        for (std::size_t k = r - 1; k-- > 0;) {   // the next row's index
          if (++index[k] < weight.dim(static_cast<std::int64_t>(k))) break;
          index[k] = 0;
        }
      }
      const std::lock_guard<std::mutex> lock(merge);
      for (std::size_t k = 0; k < r; ++k)
        for (std::size_t j = 0; j < next[k].size(); ++j) next[k][j] = std::max(next[k][j], top[k][j]);
    });
    for (std::size_t k = 0; k < r; ++k) {
      T* vk = slots[k + 1].value.data<T>();
      for (std::size_t j = 0; j < next[k].size(); ++j) vk[j] = static_cast<T>(next[k][j]);
    }
  }

  SM3Config c_;
};

}  // namespace

OptimizerPtr SM3(const SM3Config& config) { return std::make_shared<SM3Optimizer>(config); }

}  // namespace ctrax::train
