// ctrax/core/tensor/precision.hpp — the precision of float32 matrix products: float32, or
// bfloat16 inputs with float32 sums (PyTorch's CPU autocast, JAX's default TPU precision).
//
//   {
//     ProductPrecision bf16(Precision::bfloat16);   // this thread's products, until the scope ends
//     Tensor loss = model(batch)[0];                   // its products round their operands
//     auto g = grad(loss, weights);                    // their gradients' products do too
//   }
//
// WHAT CHANGES. matmul, linear (Dense) and the attention op's products (attention.hpp), on
// float32 tensors, round both operands to bfloat16 — 8 exponent bits, the top 7 of the 23
// mantissa bits, to nearest — and sum the products in float32; the result is float32. Everything
// else stays float32: the weights the optimizer updates (the "master weights" of mixed
// precision), activations, layer norm, softmax (attention's too), the losses, the optimizer's
// moments. Each input loses up to 2⁻⁹ of its value, the sums nothing; docs/11_performance.md
// compares the loss curves. float64 products are never rounded: the finite-difference checks
// run in float64.
//
// WHY. On AMD's CPUs with AVX512_BF16 (Zen 4 and 5) one instruction multiplies twice as many
// bfloat16 pairs as a float32 FMA, at the same rate, and a Transformer's training step is three
// quarters products (core/engine/gemm_bf16.hpp has the kernel). Not on every CPU that has the
// instruction: an Intel Xeon ran it slower than its float32 FMAs, and there the same scope makes
// training slower (docs/11_performance.md). Elsewhere the operands are
// rounded into copies that go through the float32 product: the same numbers (but for the order
// of the float32 sums), so a run means the same on every CPU, only without the speed — as
// PyTorch's autocast runs on any CPU.
//
// WHERE IT LIVES. In a scope object, like torch.autocast: the setting belongs to the thread that
// made it and ends with the scope, so nothing outside the code that asked for it changes. An
// op records the precision of its forward pass and its backward products use the same, whatever
// scope the backward pass runs in. train::LoopOptions::products sets it for the training steps.
#pragma once

#include "core/tensor/dtype.hpp"

namespace ctrax {

enum class Precision { float32, bfloat16 };

// True when this CPU multiplies bfloat16 pairs itself (AVX512_BF16) and the build has the kernel —
// faster than float32 where the instruction outruns the float32 FMAs (see WHY); false: the
// products are rounded copies through float32 products, slower than float32.
bool bfloat16_products_native();

// How fast a float32 product runs in bfloat16 on this CPU, against float32: a (2,048 × 256) ·
// (256 × 256) product each way, the two ways taking turns (after one of each unmeasured), float32's
// median time over bfloat16's — above 1 where the CPU's bfloat16 pair products outrun its float32
// FMAs, below where they do not (see WHY). It runs on ctrax's threads, as training's products do,
// takes tens of milliseconds, and leaves this thread's precision as it was. Where the kernel is
// not native it times the rounded copies of one product, which cost a training step more than
// that (docs/11_performance.md). The training Loop reports it when its products are bfloat16.
double bfloat16_speedup();

// This thread's precision of float32 products (float32 outside any scope).
Precision product_precision();

// Whether a product of `dtype` operands made now rounds them: float32 ones under a bfloat16 scope.
bool product_rounds(DType dtype);

// Sets this thread's product precision until the scope ends (scopes nest).
class ProductPrecision {
 public:
  explicit ProductPrecision(Precision precision);
  ~ProductPrecision();
  ProductPrecision(const ProductPrecision&) = delete;
  ProductPrecision& operator=(const ProductPrecision&) = delete;

 private:
  Precision saved_;
};

// "float32" or "bfloat16".
const char* to_string(Precision precision);

}  // namespace ctrax
