#include "core/train/adafactor.hpp"

#include <algorithm>
#include <cmath>

#include "core/engine/flush_denormals.hpp"
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
  template <class T>
  void update(std::int64_t step, double lr, Tensor& weight, const Tensor& grad, double g_scale,
              std::vector<Slot>& slots) const {
    const std::int64_t n = weight.numel();
    T* w = weight.data<T>();
    const T* g = grad.data<T>();
    const double rho = 1.0 - std::pow(static_cast<double>(step), -c_.decay_rate);
    const double mix = 1.0 - rho;
    auto g2 = [&](std::int64_t i) {
      const double gi = g_scale * static_cast<double>(g[i]);
      return gi * gi + c_.epsilon1;
    };
    std::vector<double> y(static_cast<std::size_t>(n));
    if (factored(weight)) {
      const std::int64_t C = weight.dim(-1), R = weight.dim(-2), P = n / (R * C);
      T* v_row = slots[0].value.data<T>();
      T* v_col = slots[1].value.data<T>();
      for (std::int64_t p = 0; p < P; ++p) {
        const std::int64_t base = p * R * C;
        std::vector<double> col_mean(static_cast<std::size_t>(C), 0.0);
        double row_total = 0;
        for (std::int64_t r = 0; r < R; ++r) {
          double row_sum = 0;
          for (std::int64_t c = 0; c < C; ++c) {
            const double q = g2(base + r * C + c);
            row_sum += q;
            col_mean[c] += q / static_cast<double>(R);
          }
          T& vr = v_row[p * R + r];
          vr = static_cast<T>(rho * vr + mix * row_sum / static_cast<double>(C));
          row_total += vr;
        }
        for (std::int64_t c = 0; c < C; ++c) {
          T& vc = v_col[p * C + c];
          vc = static_cast<T>(rho * vc + mix * col_mean[c]);
        }
        const double row_col_mean = row_total / static_cast<double>(R);
        for (std::int64_t r = 0; r < R; ++r) {
          const double row_factor = 1.0 / std::sqrt(v_row[p * R + r] / row_col_mean);
          for (std::int64_t c = 0; c < C; ++c) {
            const std::int64_t i = base + r * C + c;
            y[i] = g_scale * g[i] * row_factor / std::sqrt(static_cast<double>(v_col[p * C + c]));
          }
        }
      }
    } else {
      T* v = slots[0].value.data<T>();
      for (std::int64_t i = 0; i < n; ++i) {
        v[i] = static_cast<T>(rho * v[i] + mix * g2(i));
        y[i] = g_scale * g[i] / std::sqrt(static_cast<double>(v[i]));
      }
    }
    auto rms = [n](auto value_at) {
      double s = 0;
      for (std::int64_t i = 0; i < n; ++i) s += value_at(i) * value_at(i);
      return std::sqrt(s / static_cast<double>(n));
    };
    double y_scale = 1.0;
    if (c_.do_clipping)
      y_scale = 1.0 / std::max(1.0, rms([&](std::int64_t i) { return y[i]; }) / c_.clipping_threshold);
    double update_scale = lr;
    if (c_.multiply_by_parameter_scale)
      update_scale *= std::max(rms([&](std::int64_t i) { return static_cast<double>(w[i]); }),
                               c_.epsilon2);
    double wd = c_.weight_decay_rate;
    if (c_.weight_decay_n_steps > 0)
      wd *= std::max(0.0, 1.0 - static_cast<double>(step) / c_.weight_decay_n_steps);
    T* m = c_.do_momentum ? slots.back().value.data<T>() : nullptr;
    for (std::int64_t i = 0; i < n; ++i) {
      double u = update_scale * y_scale * y[i];
      if (m) {
        m[i] = static_cast<T>(c_.beta1 * m[i] + (1.0 - c_.beta1) * u);
        u = m[i];
      }
      w[i] = static_cast<T>((1.0 - wd) * w[i] - u);
    }
  }

  AdafactorConfig c_;
};

}  // namespace

OptimizerPtr Adafactor(const AdafactorConfig& config) {
  return std::make_shared<AdafactorOptimizer>(config);
}

}  // namespace ctrax::train
