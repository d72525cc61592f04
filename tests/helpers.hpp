// tests/helpers.hpp — assertions shared by every test file.
#pragma once

#include <doctest/doctest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor/gradcheck.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::testing {

// t has exactly this shape and these values (to `tol`, absolute).
inline void expect_tensor(const Tensor& t, const Shape& shape, const std::vector<double>& values,
                          double tol = 1e-6) {
  REQUIRE_MESSAGE(t.shape() == shape, "shape " << to_string(t.shape()) << " != " << to_string(shape));
  const auto got = t.to_doubles();
  REQUIRE(got.size() == values.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    CHECK_MESSAGE(std::abs(got[i] - values[i]) <= tol,
                  "element " << i << ": " << got[i] << " != " << values[i]);
}

inline void expect_close(const Tensor& a, const Tensor& b, double tol = 1e-6) {
  REQUIRE_MESSAGE(a.shape() == b.shape(), a.signature() << " vs " << b.signature());
  expect_tensor(a, b.shape(), b.to_doubles(), tol);
}

// The one gradient check: every floating input of f, by central differences in float64.
inline void expect_gradients(const StackFn& f, const std::vector<Tensor>& inputs) {
  const auto r = check_gradients(f, inputs);
  CHECK_MESSAGE(r.ok, r.report);
}

inline void expect_gradients(const std::function<Tensor(const std::vector<Tensor>&)>& f,
                             const std::vector<Tensor>& inputs) {
  expect_gradients(StackFn([f](const std::vector<Tensor>& x) { return std::vector<Tensor>{f(x)}; }),
                   inputs);
}

// Random float64 test data with values away from the kinks of relu/max (|x| > 0.1).
inline Tensor randn(const Shape& shape, std::uint64_t seed = 1) {
  Tensor t = Rng(seed).normal(shape, 0, 1, DType::float64);
  double* p = t.data<double>();
  for (std::int64_t i = 0; i < t.numel(); ++i)
    if (std::abs(p[i]) < 0.1) p[i] += p[i] < 0 ? -0.2 : 0.2;
  return t;
}

}  // namespace ctrax::testing

#include "core/layer/combinators.hpp"
#include "core/layer/gradcheck.hpp"

namespace ctrax::testing {

// Initialises `layer` for exactly these inputs, then applies it.
inline Stack init_and_run(const LayerPtr& layer, const Stack& inputs, std::uint64_t seed = 0) {
  layer->init(signature_of(inputs), Rng(seed));
  return (*layer)(inputs);
}

inline Tensor v(std::initializer_list<float> values) {
  return tensor(values, {static_cast<std::int64_t>(values.size())});
}

// Fn("Times"): x ↦ k·x, a 1 → 1 layer with no weights, for the combinators' literal tests.
inline LayerPtr Times(double k) { return layers::Fn("Times", [k](const Tensor& x) { return x * k; }); }

}  // namespace ctrax::testing

namespace ctrax::testing {

// The gradient check for a layer (core/layer/gradcheck.hpp): its floating inputs and every weight.
inline void expect_layer_gradients(const LayerPtr& layer, const Stack& inputs) {
  const auto r = check_layer_gradients(layer, inputs);
  CHECK_MESSAGE(r.ok, r.report);
}

// A language model that make(mode) builds reproduces, in predict mode, its eval-mode outputs for
// tokens x (B, L): fed the start token 0 and then token t−1 at step t (predict mode does not
// shift), one position at a time, with the eval model's weights.
inline void expect_lm_eval_equals_predict(const std::function<LayerPtr(Mode)>& make, const Tensor& x,
                                          double tol = 1e-5) {
  auto eval = make(Mode::eval);
  eval->init(signature_of(Stack{x}), Rng(2));
  const Tensor expected = (*eval)(x);
  auto predict = make(Mode::predict);
  predict->init(ShapeDtype{{x.dim(0), 1}, DType::int32}, Rng(9));
  predict->set_all_weights(eval->all_weights());
  for (std::int64_t t = 0; t < x.dim(1); ++t) {
    const Tensor step = t == 0 ? Tensor::zeros({x.dim(0), 1}, DType::int32) : slice(x, 1, t - 1, t);
    expect_close((*predict)(step), slice(expected, 1, t, t + 1), tol);
  }
}

}  // namespace ctrax::testing
