#include "core/train/adafactor.hpp"

#include <algorithm>
#include <cmath>

#include "core/engine/broadcast.hpp"
#include "core/engine/flush_denormals.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/dispatch.hpp"

namespace ctrax::train {
namespace {

class AdafactorOptimizer : public Optimizer {
 public:
  explicit AdafactorOptimizer(const AdafactorConfig& c)
      : Optimizer("Adafactor", c.learning_rate, c.clip_grad_norm), c_(c) {}

 protected:
  bool factored(const Tensor& w) const { return c_.factored && w.rank() >= 2; }

  std::vector<Slot> init_slots(const Tensor& w) const override {
    std::vector<Slot> slots;
    const Shape& s = w.shape();
    if (factored(w)) {
      Shape row(s.begin(), s.end() - 1), col(s.begin(), s.end() - 2);
      col.push_back(s.back());
      slots.push_back({"v_row", zero_slot(w, row)});
      slots.push_back({"v_col", zero_slot(w, col)});
    } else {
      slots.push_back({"v", zero_slot(w)});
    }
    if (c_.do_momentum) slots.push_back({"m", zero_slot(w)});
    return slots;
  }

  void update_weight(std::int64_t step, double lr, Tensor& weight, const Tensor& g,
                     double g_scale, std::vector<Slot>& slots) const override {
    const FlushDenormals flush;   // the decaying second moments pass through the subnormals
    dispatch_float(weight.dtype(), [&]<class T>(T) { update<T>(step, lr, weight, g, g_scale, slots); },
                   "Adafactor");
  }

 private:
  // Passes over the weight, each cut among the threads: the second moments; the sum of y² for the
  // update clipping, in pieces fixed by the size so the total has the same bits on any team
  // (parallel.hpp, FIXED PARTS); the step. y = g · s is never stored: its scale s is one number per
  // weight for a full v, and a row's factor times a column's for a factored one.
  template <class T>
  void update(std::int64_t step, double lr, Tensor& weight, const Tensor& grad, double g_scale,
              std::vector<Slot>& slots) const {
    const std::int64_t n = weight.numel();
    const bool big = n >= kParallelElements;
    T* const w = weight.data<T>();
    const T* const g = grad.data<T>();
    const double rho = 1.0 - std::pow(static_cast<double>(step), -c_.decay_rate);
    const double mix = 1.0 - rho, eps1 = c_.epsilon1;
    const auto g2 = [&](std::int64_t i) {
      const double gi = g_scale * static_cast<double>(g[i]);
      return gi * gi + eps1;
    };
    // The weight as lines of C: a factored weight's rows (C its last axis), else one line of all.
    const bool by_rows = factored(weight);
    const std::int64_t C = by_rows ? weight.dim(-1) : n, R = by_rows ? weight.dim(-2) : 1;
    const std::int64_t lines = n / std::max<std::int64_t>(C, 1);
    std::vector<double> row_scale, col_scale;   // factored: y_i = g_i · row_scale[line] · col_scale[column]
    const T* v = nullptr;                       // full: y_i = g_scale · g_i / √v_i
    if (by_rows) {
      T* const v_row = slots[0].value.data<T>();
      T* const v_col = slots[1].value.data<T>();
      parallel_chunks(lines, big, [&](std::int64_t r0, std::int64_t r1) {
        for (std::int64_t r = r0; r < r1; ++r)
          v_row[r] = static_cast<T>(rho * v_row[r] + mix * sum_over(r * C, (r + 1) * C, g2) / static_cast<double>(C));
      });
      // Each column's sum by the thread that owns the column, its rows added in order.
      const std::int64_t P = lines / R;
      parallel_chunks(P * C, big, [&](std::int64_t j0, std::int64_t j1) {
        std::vector<double> sums(static_cast<std::size_t>(std::min(C, j1 - j0)));
        for (std::int64_t j = j0; j < j1;) {
          const std::int64_t p = j / C, c0 = j % C, c1 = std::min(C, c0 + (j1 - j));
          std::fill(sums.begin(), sums.end(), 0.0);
          for (std::int64_t r = 0; r < R; ++r)
            for (std::int64_t c = c0, i = (p * R + r) * C + c0; c < c1; ++c, ++i) sums[static_cast<std::size_t>(c - c0)] += g2(i);
          for (std::int64_t c = c0; c < c1; ++c) {
            T& vc = v_col[p * C + c];
            vc = static_cast<T>(rho * vc + mix * sums[static_cast<std::size_t>(c - c0)] / static_cast<double>(R));
          }
          j += c1 - c0;
        }
      });
      row_scale.resize(static_cast<std::size_t>(lines));
      col_scale.resize(static_cast<std::size_t>(P * C));
      for (std::int64_t p = 0; p < P; ++p) {
        double row_total = 0;
        for (std::int64_t r = p * R; r < (p + 1) * R; ++r) row_total += v_row[r];
        const double row_mean = row_total / static_cast<double>(R);
        for (std::int64_t r = p * R; r < (p + 1) * R; ++r)
          row_scale[static_cast<std::size_t>(r)] = g_scale / std::sqrt(v_row[r] / row_mean);
        for (std::int64_t j = p * C; j < (p + 1) * C; ++j)
          col_scale[static_cast<std::size_t>(j)] = 1.0 / std::sqrt(static_cast<double>(v_col[j]));
      }
    } else {
      T* const v_full = slots[0].value.data<T>();
      parallel_chunks(n, big, [&](std::int64_t i0, std::int64_t i1) {
        for (std::int64_t i = i0; i < i1; ++i) v_full[i] = static_cast<T>(rho * v_full[i] + mix * g2(i));
      });
      v = v_full;
    }
    // f(i, y_i) for i in [i0, i1), cut where lines end.
    const auto for_y = [&](std::int64_t i0, std::int64_t i1, auto&& f) {
      if (v) {
        for (std::int64_t i = i0; i < i1; ++i) f(i, g_scale * static_cast<double>(g[i]) / std::sqrt(static_cast<double>(v[i])));
        return;
      }
      for (std::int64_t line = i0 / C; line * C < i1; ++line) {
        const double rs = row_scale[static_cast<std::size_t>(line)];
        const double* const cs = col_scale.data() + line / R * C;
        const std::int64_t base = line * C, end = std::min(i1, base + C);
        for (std::int64_t i = std::max(i0, base); i < end; ++i) f(i, rs * static_cast<double>(g[i]) * cs[i - base]);
      }
    };
    double update_scale = lr;
    if (c_.do_clipping) {
      const double sum_y2 = sum_in_pieces(n, big, [&](std::int64_t i0, std::int64_t i1) {
        double s = 0;
        for_y(i0, i1, [&s](std::int64_t, double y) { s += y * y; });
        return s;
      });
      update_scale /= std::max(1.0, std::sqrt(sum_y2 / static_cast<double>(n)) / c_.clipping_threshold);
    }
    if (c_.multiply_by_parameter_scale)
      update_scale *= std::max(std::sqrt(sum_of_squares({weight}) / static_cast<double>(n)), c_.epsilon2);
    double wd = c_.weight_decay_rate;
    if (c_.weight_decay_n_steps > 0)
      wd *= std::max(0.0, 1.0 - static_cast<double>(step) / c_.weight_decay_n_steps);
    T* const m = c_.do_momentum ? slots.back().value.data<T>() : nullptr;
    const double beta1 = c_.beta1, keep = 1.0 - wd;
    parallel_chunks(n, big, [&](std::int64_t i0, std::int64_t i1) {
      for_y(i0, i1, [&](std::int64_t i, double y) {
        double u = update_scale * y;
        if (m) {
          m[i] = static_cast<T>(beta1 * m[i] + (1.0 - beta1) * u);
          u = m[i];
        }
        w[i] = static_cast<T>(keep * w[i] - u);
      });
    });
  }

  AdafactorConfig c_;
};

}  // namespace

OptimizerPtr Adafactor(const AdafactorConfig& config) {
  return std::make_shared<AdafactorOptimizer>(config);
}

}  // namespace ctrax::train
