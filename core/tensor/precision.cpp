#include "core/tensor/precision.hpp"

#include <algorithm>
#include <chrono>
#include <vector>

#include "core/engine/gemm_bf16.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/matmul.hpp"
#include "core/tensor/random.hpp"

namespace ctrax {

namespace {
thread_local Precision current = Precision::float32;
}

bool bfloat16_products_native() { return blas::bf16_products_available(); }

double bfloat16_speedup() {
  constexpr std::int64_t kRows = 2048, kWidth = 256;   // a Transformer layer's product of 2,048 tokens
  constexpr int kTimed = 5;
  NoGrad no_grad;
  const Rng rng(0);
  const Tensor a = rng.uniform({kRows, kWidth}, -1, 1), b = rng.fold_in(1).uniform({kWidth, kWidth}, -1, 1);
  const auto seconds = [&](Precision p) {
    const ProductPrecision scope(p);
    const auto start = std::chrono::steady_clock::now();
    const Tensor c = matmul(a, b);
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  };
  std::vector<double> f32, bf16;
  for (int i = 0; i <= kTimed; ++i) {   // the first of each way unmeasured: its packing room, its pages
    const double t32 = seconds(Precision::float32), t16 = seconds(Precision::bfloat16);
    if (i == 0) continue;
    f32.push_back(t32);
    bf16.push_back(t16);
  }
  const auto median = [](std::vector<double>& v) {
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    return v[v.size() / 2];
  };
  return median(f32) / median(bf16);
}

Precision product_precision() { return current; }

bool product_rounds(DType dtype) { return dtype == DType::float32 && current == Precision::bfloat16; }

ProductPrecision::ProductPrecision(Precision precision) : saved_(current) { current = precision; }

ProductPrecision::~ProductPrecision() { current = saved_; }

const char* to_string(Precision precision) { return precision == Precision::bfloat16 ? "bfloat16" : "float32"; }

}  // namespace ctrax
