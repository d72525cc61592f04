// bench/bench_transformer.cpp — one TransformerLM training step and one decoded token, ctrax only.
//
//   env -u OPENBLAS_CORETYPE build/bench/bench_transformer [--reps N]
//
// Config: vocab 256, d_model 256, d_ff 1024, 4 layers, 4 heads, B 16, L 128, dropout 0.1.
// Reports the median time of forward + loss + backward + Adam update of every weight,
// its rate in GFLOP/s (6 · params · tokens for the dense layers + 3 · 4·B·L²·d for attention's
// two products per layer), and the predict-mode cost per token with the KV cache (B 1, 255 tokens).
// The side-by-side PyTorch comparison is the speed issue's; this is the number it starts from.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "core/tensor/blas_kernels.hpp"
#include "core/tensor/ops.hpp"
#include "core/tensor/runtime.hpp"
#include "examples/flags.hpp"
#include "core/layer/serial.hpp"
#include "core/train/adam.hpp"
#include "layers/metrics.hpp"
#include "models/transformer.hpp"

using namespace ctrax;
using namespace ctrax::models;
using Clock = std::chrono::steady_clock;

int main(int argc, char** argv) {
  int reps = 10;
  CLI::App app{"Time a Transformer training step."};
  app.add_option("--reps", reps, "timed repetitions")->capture_default_str()->check(examples::number_in(1, 1e6));
  examples::decimal_numbers(app);
  CLI11_PARSE(app, argc, argv);
  configure_process();
  if (const std::string note = blas::kernels_note(blas::check_kernels()); !note.empty()) fmt::print(stderr, "{}\n", note);
  const std::int64_t V = 256, B = 16, L = 128, n_layers = 4;
  TransformerConfig c{.d_model = 256, .d_ff = 1024, .n_layers = n_layers, .n_heads = 4,
                      .max_len = 256, .dropout = 0.1};
  auto lm = TransformerLM(V, c);
  auto model = layers::make_serial({lm, layers::WeightedCategoryCrossEntropy()});
  const Tensor x = Rng(1).randint({B, L}, 1, V), w = Tensor::ones({B, L});
  model->init(signature_of(Stack{x, x, w}), Rng(0));
  const auto weights = model->all_weights();

  auto adam = train::Adam();
  std::vector<double> ms, adam_ms;
  for (int it = 0; it < reps + 2; ++it) {
    const auto t0 = Clock::now();
    const Tensor loss = (*model)(Stack{x, x, w})[0];
    const auto g = grad(loss, weights);
    const auto t1 = Clock::now();
    adam->update(it + 1, 1e-4, weights, g);
    if (it >= 2) {
      ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t0).count());
      adam_ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - t1).count());
    }
  }
  std::sort(adam_ms.begin(), adam_ms.end());
  std::sort(ms.begin(), ms.end());
  const double step_ms = ms[ms.size() / 2];
  const double dense_params = static_cast<double>(model->n_params() - V * c.d_model - c.max_len * c.d_model);
  const double flops = 6.0 * dense_params * B * L +
                       3.0 * n_layers * 4.0 * B * L * L * static_cast<double>(c.d_model);
  fmt::print("TransformerLM train step (B {}, L {}, d {}, {} layers): {:.1f} ms median, {:.0f} GFLOP/s"
             " (of which the Adam update {:.1f} ms)\n",
             B, L, c.d_model, n_layers, step_ms, flops / step_ms / 1e6, adam_ms[adam_ms.size() / 2]);

  c.mode = Mode::predict;
  auto decoder = TransformerLM(V, c);
  decoder->init(ShapeDtype{{1, 1}, DType::int32}, Rng(0));
  const Tensor token = Tensor::zeros({1, 1}, DType::int32);
  const auto t0 = Clock::now();
  for (int t = 0; t < 255; ++t) (*decoder)(token);
  fmt::print("TransformerLM predict mode (B 1, 255 tokens, KV cache): {:.3f} ms per token\n",
             std::chrono::duration<double, std::milli>(Clock::now() - t0).count() / 255);
}
