#include "core/tensor/precision.hpp"

#include <stdexcept>

#include "core/engine/gemm_bf16.hpp"

namespace ctrax {

namespace {
thread_local Precision current = Precision::float32;
}

bool bfloat16_products_available() { return blas::bf16_products_available(); }

Precision product_precision() { return current; }

ProductPrecision::ProductPrecision(Precision precision) : saved_(current) {
  if (precision == Precision::bfloat16 && !bfloat16_products_available())
    throw std::invalid_argument(
        "bfloat16 products need a CPU with AVX512_BF16 (AMD Zen 4 or later, Intel Cooper Lake or later); "
        "this one has none — train in float32");
  current = precision;
}

ProductPrecision::~ProductPrecision() { current = saved_; }

const char* to_string(Precision precision) { return precision == Precision::bfloat16 ? "bfloat16" : "float32"; }

}  // namespace ctrax
