#include "core/tensor/precision.hpp"

#include "core/engine/gemm_bf16.hpp"

namespace ctrax {

namespace {
thread_local Precision current = Precision::float32;
}

bool bfloat16_products_native() { return blas::bf16_products_available(); }

Precision product_precision() { return current; }

bool product_rounds(DType dtype) { return dtype == DType::float32 && current == Precision::bfloat16; }

ProductPrecision::ProductPrecision(Precision precision) : saved_(current) { current = precision; }

ProductPrecision::~ProductPrecision() { current = saved_; }

const char* to_string(Precision precision) { return precision == Precision::bfloat16 ? "bfloat16" : "float32"; }

}  // namespace ctrax
