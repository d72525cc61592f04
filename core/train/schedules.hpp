// ctrax/core/train/schedules.hpp — learning-rate schedules (trax/supervised/lr_schedules.py).
//
// A schedule is a function step ↦ learning rate, steps counted from 1. The Loop asks it once per
// step and hands the value to the optimizer.
//
//   constant(v)                     v
//   warmup(n, v)                    step/(n+1) · v for step ≤ n, then v       (linear ramp)
//   warmup_and_rsqrt_decay(n, v)    step/(n+1) · v for step ≤ n,
//                                   then v · √(n+1) / √step                   (Noam's shape,
//                                   with its peak v named directly)
//   noam(d_model, n, k)             k · d_model^−½ · min(step^−½, step · n^−³ᐟ²)   (the paper's
//                                   formula, Vaswani et al. 2017 §5.3: linear up to its peak
//                                   k / √(d_model · n) at step n, then down as 1/√step)
//   warmup_and_cosine_decay(n, N, v) step/(n+1) · v for step ≤ n, then
//                                   v · ½ (1 + cos(π · (step − n) / (N − n + 1)))
//                                   (down to ~0 at the last step N: "cooling down" — the final
//                                   steps at a small rate settle into the valley the large rate
//                                   only bounced around in; docs/10_real_data.md measures it)
//   multifactor({...})              a product of named factors (below), floored at `minimum`
//
// multifactor's factors, as in Trax ("constant * linear_warmup * rsqrt_decay" by default):
//   constant                 · constant
//   linear_warmup            · min(1, step / warmup_steps)
//   rsqrt_decay              · 1 / √max(step, warmup_steps)
//   rsqrt_normalized_decay   · √warmup_steps / √max(step, warmup_steps)
//   decay_every              · decay_factor ^ ⌊step / steps_per_decay⌋
//   cosine_decay             · ½ (1 + cos(π · (max(0, (step − warmup_steps)/steps_per_cycle) mod 1)))
//   two_constants            · constant before second_constant_step, second_constant from it on
// An unknown factor name is an error when the schedule is made, not at step 1.
#pragma once

#include <cstdint>
#include <functional>
#include <string>

namespace ctrax::train {

using Schedule = std::function<double(std::int64_t step)>;

Schedule constant(double value);
Schedule warmup(std::int64_t n_warmup_steps, double max_value);
Schedule warmup_and_rsqrt_decay(std::int64_t n_warmup_steps, double max_value);
Schedule noam(std::int64_t d_model, std::int64_t n_warmup_steps, double factor = 1.0);
// Steps after n_steps keep the last value (v · ½ (1 + cos(π · (N − n)/(N − n + 1))), never
// back up as multifactor's cosine_decay cycle would).
Schedule warmup_and_cosine_decay(std::int64_t n_warmup_steps, std::int64_t n_steps, double max_value);

struct MultifactorConfig {
  std::string factors = "constant * linear_warmup * rsqrt_decay";
  double constant = 0.1;
  std::int64_t warmup_steps = 400;
  double decay_factor = 0.5;                 // decay_every
  std::int64_t steps_per_decay = 20000;      // decay_every
  std::int64_t steps_per_cycle = 100000;     // cosine_decay
  double second_constant = 0.01;             // two_constants
  std::int64_t second_constant_step = 10000; // two_constants
  double minimum = 0;                        // the result never goes below this
};
Schedule multifactor(const MultifactorConfig& config = {});

}  // namespace ctrax::train
