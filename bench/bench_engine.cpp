// bench/bench_engine.cpp — the engine's kernels against the machine's limits.
//
//   env -u OPENBLAS_CORETYPE build/bench/bench_engine [--reps N]
//
// (Unset OPENBLAS_CORETYPE: these machines export Haswell, which halves sgemm; see
// ../shared/bench/RESULTS.md.) Reports, as medians over repetitions:
//   - ctrax matmul vs a direct cblas_sgemm call on the same buffers (target >= 95% of direct);
//   - 64 attention-shaped products (B·H = 64 of 128×64 · 64×128), outer loop parallel and BLAS
//     single-threaded inside (target >= 250 GFLOP/s on 2 threads);
//   - products of 1, 4 and 8 rows (decoding one token, a beam, a batch: x·W) over a set of weight
//     matrices as large as a decoding model's, in GB/s of weights read, against the same run's
//     read bandwidth of that many bytes (read_bandwidth.hpp) and against OpenBLAS on one thread;
//     on all threads each W as it is and packed in panels, as the decoders read it
//     (core/engine/weight_panels.hpp);
//   - fused softmax and layer norm, forward + backward, in GB/s of compulsory traffic;
//   - conv2d on each convolution shape of bench_train's WRN-10-1 (batch 128, 32×32): forward, each
//     gradient and all three, in GFLOP/s (the figures to hold against the sgemm peak above);
//   - one update of each of Trax's optimizers over the weights of bench_train's M TransformerLM
//     (what the `lm` example trains), in ms and in GB/s of the weights', gradients' and slots'
//     compulsory traffic.
// --only NAME runs one of these parts (products, fused, conv, optimizers).
#include <cblas.h>
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <vector>

#include "core/tensor/blas_kernels.hpp"
#include "core/tensor/convolution.hpp"
#include "core/tensor/ops.hpp"
#include "examples/flags.hpp"
#include "core/tensor/runtime.hpp"
#include "core/engine/parallel.hpp"
#include "core/engine/weight_panels.hpp"
#include "core/train/adafactor.hpp"
#include "core/train/adam.hpp"
#include "core/train/momentum.hpp"
#include "core/train/rms_prop.hpp"
#include "core/train/sgd.hpp"
#include "core/train/sm3.hpp"
#include "models/registry.hpp"
#include "bench/read_bandwidth.hpp"

using namespace ctrax;

namespace {

double median_seconds(int reps, const std::function<void()>& f) {
  for (int i = 0; i < 3; ++i) f();  // warm-up: first touch of memory, BLAS thread start-up
  std::vector<double> t;
  for (int i = 0; i < reps; ++i) {
    const auto start = std::chrono::steady_clock::now();
    f();
    t.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
  }
  std::sort(t.begin(), t.end());
  return t[t.size() / 2];
}

void bench_matmul(int reps, std::int64_t M, std::int64_t K, std::int64_t N) {
  const Tensor a = Rng(1).normal({M, K}), b = Rng(2).normal({K, N});
  Tensor c = Tensor::empty({M, N});
  const double flops = 2.0 * M * N * K;
  const double direct = median_seconds(reps, [&] {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a.data<float>(), K,
                b.data<float>(), N, 0.0f, c.data<float>(), N);
  });
  const double ours = median_seconds(reps, [&] { c = matmul(a, b); });
  fmt::print("matmul {:>4}x{:<4}x{:<4}  direct sgemm {:6.1f} GFLOP/s   ctrax {:6.1f} GFLOP/s   "
             "ratio {:5.1f}%\n", M, N, K, flops / direct / 1e9, flops / ours / 1e9,
             100.0 * direct / ours);
}

void bench_attention(int reps) {
  const std::int64_t BH = 64, L = 128, d = 64;
  const Tensor q = Rng(3).normal({BH, L, d}), k = Rng(4).normal({BH, L, d});
  const double flops = 2.0 * BH * L * L * d;
  Tensor s;
  const double t = median_seconds(reps, [&] { s = matmul(q, k, false, true); });
  fmt::print("attention scores {}x({}x{} · {}x{})  {:6.1f} GFLOP/s  ({} threads, outer loop "
             "parallel)\n", BH, L, d, d, L, flops / t / 1e9, num_threads());
}

// M×K · K×N products of M = 1 to 8 rows (decoding one token, a batch or a beam: x·W), one per
// matrix of a set of `mb` megabytes (the M decoding model streams ~14 MB per token: more than L2,
// less than some L3s), so each rep reads every matrix once from wherever the set lives, as
// decoding does. Against OpenBLAS called directly on one thread (sgemv for a row, sgemm for rows).
void bench_few_rows(int reps, std::int64_t M, std::int64_t K, std::int64_t N, double mb) {
  reps = std::max(reps, 200);   // each rep is short, and what the VMs serve from their caches varies rep to rep
  const auto count = std::max<std::int64_t>(1, static_cast<std::int64_t>(mb * 1e6 / (4.0 * K * N)));
  std::vector<Tensor> w;
  for (std::int64_t i = 0; i < count; ++i) w.push_back(Rng(20 + i).normal({K, N}));
  const Tensor x = Rng(19).normal({M, K});
  Tensor y = Tensor::empty({M, N});
  const double bytes = 4.0 * K * N * count;
  // Inside one region, as the decoders run a token (parallel.hpp): each product's split hands its
  // parts to the waiting threads instead of opening a region of its own.
  const auto ours = [&] { in_one_region([&] { for (const Tensor& wi : w) y = matmul(x, wi); }); };
  const int threads = num_threads();
  set_num_threads(1);
  const double one = median_seconds(reps, ours);
  const double direct = median_seconds(reps, [&] {
    for (const Tensor& wi : w)
      if (M == 1)
        cblas_sgemv(CblasRowMajor, CblasTrans, K, N, 1.0f, wi.data<float>(), N, x.data<float>(), 1, 0.0f,
                    y.data<float>(), 1);
      else
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, x.data<float>(), K, wi.data<float>(), N,
                    0.0f, y.data<float>(), N);
  });
  const double read_one = bench::read_bandwidth_gbs(bytes / 1e6);
  set_num_threads(threads);
  const double all = median_seconds(reps, ours);
  // The decoders' way: every W packed once into panels (core/engine/weight_panels.hpp).
  std::vector<blas::WeightPanels::Matrix> matrices;
  for (const Tensor& wi : w) matrices.push_back({wi.raw_data(), K, N, sizeof(float)});
  double packed = 0;
  {
    const blas::WeightPanels scope(matrices);
    packed = median_seconds(reps, ours);
  }
  const double read_all = bench::read_bandwidth_gbs(bytes / 1e6);
  fmt::print("{} row{} {}x{}·{}x{} ({} matrices, {:.1f} MB)  1 thread: ctrax {:5.1f} GB/s of W ({:3.0f}% of reading), "
             "OpenBLAS {:5.1f}   {} threads: ctrax {:5.1f} GB/s ({:3.0f}% of reading {:5.1f}), packed {:5.1f} ({:3.0f}%)\n",
             M, M == 1 ? " " : "s", M, K, K, N, count, bytes / 1e6, bytes / one / 1e9, 100 * bytes / one / 1e9 / read_one,
             bytes / direct / 1e9, threads, bytes / all / 1e9, 100 * bytes / all / 1e9 / read_all, read_all,
             bytes / packed / 1e9, 100 * bytes / packed / 1e9 / read_all);
}

void bench_fused(int reps) {
  const std::int64_t rows = 64 * 128, n = 128;   // attention probabilities of B·H = 64, L = 128
  const Tensor x = Rng(5).normal({rows, n}).requires_grad_();
  const Tensor g = Rng(6).normal({rows, n});
  const double bytes = 4.0 * rows * n;
  // forward reads x, writes y; backward reads y and g, writes dx: 5 passes over rows·n floats
  const double t_sm = median_seconds(reps, [&] { grad(softmax(x), {x}, {.seed = g}); });
  fmt::print("softmax fwd+bwd ({}x{})            {:6.1f} GB/s\n", rows, n, 5 * bytes / t_sm / 1e9);

  const std::int64_t tokens = 16 * 256, d = 512;
  const Tensor h = Rng(7).normal({tokens, d}).requires_grad_();
  const Tensor scale = Tensor::ones({d}).requires_grad_(), bias = Tensor::zeros({d}).requires_grad_();
  const Tensor gh = Rng(8).normal({tokens, d});
  const double lbytes = 4.0 * tokens * d;
  // forward reads x, writes y and x̂; backward reads g and x̂, writes dx: 6 passes
  const double t_ln = median_seconds(reps, [&] { grad(layer_norm(h, scale, bias), {h, scale, bias}, {.seed = gh}); });
  fmt::print("layer_norm fwd+bwd ({}x{})         {:6.1f} GB/s\n", tokens, d, 6 * lbytes / t_ln / 1e9);

  // batch norm + relu over WRN-10-1's first activations (128 images of 32×32×16): forward reads x
  // twice (statistics, then y), writes y; backward reads g and x twice, writes dx: 7 passes
  const Tensor img = Rng(12).normal({128, 32, 32, 16}).requires_grad_();
  const Tensor bn_scale = Tensor::ones({16}).requires_grad_(), bn_bias = Tensor::zeros({16}).requires_grad_();
  const Tensor gi = Rng(13).normal({128, 32, 32, 16});
  const double bbytes = 4.0 * img.numel();
  const double t_bn = median_seconds(reps, [&] {
    grad(batch_norm(img, bn_scale, bn_bias, 1e-5, true).y, {img, bn_scale, bn_bias}, {.seed = gi});
  });
  fmt::print("batch_norm + relu fwd+bwd ({}x32x32x16) {:6.1f} GB/s\n", 128, 7 * bbytes / t_bn / 1e9);
}

// One convolution of shape (B, n, n, c_in) ⋆ (k, k, c_in, c_out), SAME padding, the given stride.
void bench_conv(int reps, std::int64_t n, std::int64_t c_in, std::int64_t c_out, std::int64_t k, std::int64_t stride) {
  const std::int64_t B = 128, out = (n + stride - 1) / stride;
  const Tensor x = Rng(9).normal({B, n, n, c_in}).requires_grad_();
  const Tensor w = Rng(10).normal({k, k, c_in, c_out}).requires_grad_();
  const Tensor g = Rng(11).normal({B, out, out, c_out});
  const WindowOptions o{.strides = {stride, stride}, .padding = Padding::same};
  const double flops = 2.0 * B * out * out * k * k * c_in * c_out;
  const double fwd = median_seconds(reps, [&] { (void)conv2d(x.detach(), w.detach(), o); });
  const double fwd_dw = median_seconds(reps, [&] { grad(conv2d(x.detach(), w, o), {w}, {.seed = g}); });
  const double all = median_seconds(reps, [&] { grad(conv2d(x, w, o), {x, w}, {.seed = g}); });
  // each gradient's time as the difference of two medians: indicative, the forward's is measured
  fmt::print("conv2d {:>2}x{:<2} {:>2}->{:<2} {}x{} /{}   forward {:6.1f}   weight grad {:6.1f}   input grad {:6.1f}   "
             "all three {:6.1f} GFLOP/s\n", n, n, c_in, c_out, k, k, stride, flops / fwd / 1e9,
             flops / std::max(fwd_dw - fwd, 1e-9) / 1e9, flops / std::max(all - fwd_dw, 1e-9) / 1e9,
             3 * flops / all / 1e9);
}

// One update of each optimizer over the M TransformerLM's weights (bench_train's config M: vocab 256,
// d_model 256, d_ff 1024, 4 layers), after a first step that makes the slots. Traffic: each update
// reads the weights, the gradients and the slots, and writes the weights and the slots.
void bench_optimizers(int reps) {
  const models::ModelSpec spec{.name = "TransformerLM", .vocab_size = 256,
                               .config = {.d_model = 256, .d_ff = 1024, .n_layers = 4, .n_heads = 4, .max_len = 256}};
  auto model = models::build(spec, Mode::train);
  model->init(ShapeDtype{{16, 256}, DType::int32}, Rng(0));
  std::vector<Tensor> weights = model->all_weights(), grads;
  std::int64_t params = 0;
  for (const Tensor& w : weights) {
    grads.push_back(Rng(params + 1).normal(w.shape(), 0.0, 1e-2));
    params += w.numel();
  }
  const std::vector<std::pair<const char*, train::OptimizerPtr>> optimizers{
      {"Adam", train::Adam({.learning_rate = 1e-3})}, {"Adafactor", train::Adafactor()},
      {"Momentum", train::Momentum()}, {"RMSProp", train::RMSProp()}, {"SM3", train::SM3()}, {"SGD", train::SGD()}};
  for (const auto& [name, opt] : optimizers) {
    std::int64_t step = 1;
    opt->update(step, 1e-3, weights, grads);
    std::int64_t slot_elements = 0;
    for (const auto& slots : opt->slots())
      for (const train::Slot& s : slots) slot_elements += s.value.numel();
    const double t = median_seconds(reps, [&] { opt->update(++step, 1e-3, weights, grads); });
    const double bytes = 4.0 * (3 * params + 2 * slot_elements);
    fmt::print("{:<10} update of {} weights   {:6.2f} ms   {:6.1f} GB/s\n", name, params, 1e3 * t, bytes / t / 1e9);
  }
}

}  // namespace

int main(int argc, char** argv) {
  int reps = 40;
  std::string only;
  CLI::App app{"Time ctrax's ops and layers."};
  app.add_option("--reps", reps, "timed repetitions")->capture_default_str()->check(examples::number_in(1, 1e6));
  app.add_option("--only", only, "run one part")->check(CLI::IsMember({"products", "fused", "conv", "optimizers"}));
  examples::decimal_numbers(app);
  CLI11_PARSE(app, argc, argv);
  configure_process();
  if (const std::string note = blas::kernels_note(blas::check_kernels()); !note.empty()) fmt::print(stderr, "{}\n", note);
  fmt::print("threads: {}\n", num_threads());
  const auto part = [&](const char* name) { return only.empty() || only == name; };
  if (part("products")) {
    bench_matmul(reps, 512, 512, 512);
    bench_matmul(reps, 2048, 256, 1024);
    bench_attention(reps);
    for (const auto [K, N] : {std::array<std::int64_t, 2>{256, 256}, {256, 1024}, {1024, 256}, {512, 2048}})
      bench_few_rows(reps, 1, K, N, 14);
    for (const std::int64_t M : {4, 8}) bench_few_rows(reps, M, 256, 1024, 14);
  }
  if (part("fused")) bench_fused(reps);
  for (const auto [n, c_in, c_out, k, stride] : {std::array<std::int64_t, 5>{32, 1, 16, 3, 1}, {32, 3, 16, 3, 1}, {32, 16, 16, 3, 1},
                                                {32, 16, 32, 3, 2}, {32, 16, 32, 1, 2}, {16, 32, 32, 3, 1},
                                                {16, 32, 64, 3, 2}, {8, 64, 64, 3, 1}})
    if (part("conv")) bench_conv(std::max(3, reps / 4), n, c_in, c_out, k, stride);
  if (part("optimizers")) bench_optimizers(reps);
  return 0;
}
