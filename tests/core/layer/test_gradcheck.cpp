// check_layer_gradients (core/layer/gradcheck.hpp): passes a correct layer, catches a weight whose
// gradient the tape never sees, and leaves the layer's own weights bound as they were.
#include <doctest/doctest.h>

#include <memory>

#include "core/layer/gradcheck.hpp"
#include "core/layer/serial.hpp"
#include "core/tensor/ops.hpp"
#include "layers/dense.hpp"
#include "layers/initializers.hpp"

using namespace ctrax;
namespace tl = ctrax::layers;

namespace {

// y = x ⊙ s, where `forget` cuts s out of the tape: the output depends on s, its gradient says not.
class Scale final : public Layer {
 public:
  explicit Scale(bool forget) : Layer("Scale", 1, 1, std::source_location::current()), forget_(forget) {}

 protected:
  void init_weights_and_state(const Signature& input) override {
    add_weight("s", {input.at(0).shape.back()}, input.at(0).dtype, tl::random_normal(1.0), rng());
  }
  Stack forward(const Stack& in) override { return {in[0] * (forget_ ? weights()[0].detach() : weights()[0])}; }

 private:
  bool forget_;
};

}  // namespace

TEST_CASE("check_layer_gradients: inputs and weights against finite differences") {
  const Tensor x = Rng(1).normal({2, 4}, 0, 1, DType::float64);
  auto good = tl::Serial(tl::Dense(3), std::make_shared<Scale>(false));
  good->init(signature_of(Stack{x}), Rng(0));
  const auto weights = good->all_weights();
  const auto r = check_layer_gradients(good, {x});
  CHECK_MESSAGE(r.ok, r.report);
  CHECK(r.relative_errors.size() == 4);   // x, w, b, s
  const auto after = good->all_weights();
  for (std::size_t i = 0; i < weights.size(); ++i) CHECK(after[i].same_as(weights[i]));

  auto bad = tl::Serial(tl::Dense(3), std::make_shared<Scale>(true));
  bad->init(signature_of(Stack{x}), Rng(0));
  const auto wrong = check_layer_gradients(bad, {x});
  CHECK_FALSE(wrong.ok);
  CHECK(wrong.relative_errors.at(3) > 0.5);   // s: the tape says 0, differences say otherwise
}
