#include <doctest/doctest.h>

#include "core/layer/combinators.hpp"
#include "layers/batch_norm.hpp"
#include "layers/dense.hpp"
#include "tests/helpers.hpp"
#include "tests/random_tree.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

TEST_CASE("init returns the output signature and creates the weights") {
  auto model = Serial(Dense(4), Dense(2));
  const auto out = model->init(ShapeDtype{{3, 5}});
  REQUIRE(out.size() == 1);
  CHECK(out[0] == ShapeDtype{{3, 2}, DType::float32});
  CHECK(model->n_params() == 5 * 4 + 4 + 4 * 2 + 2);
  CHECK(model->initialized());
}

TEST_CASE("output_signature infers shapes without data") {
  auto model = Serial(Dense(4), Dup());
  model->init(ShapeDtype{{3, 5}});
  const auto sig = model->output_signature({ShapeDtype{{7, 2, 5}}});
  REQUIRE(sig.size() == 2);
  CHECK(sig[1].shape == Shape{7, 2, 4});
}

TEST_CASE("all_weights is depth-first; named_weights names the tree path") {
  auto model = Serial(Dense(4), Parallel(Dense(3), Dense(2)));
  model->init({ShapeDtype{{1, 5}}, ShapeDtype{{1, 6}}});
  const auto named = model->named_weights();
  REQUIRE(named.size() == 6);
  CHECK(named[0].first == "Serial/Dense_4[0]/w");
  CHECK(named[1].first == "Serial/Dense_4[0]/b");
  CHECK(named[2].first == "Serial/Parallel[1]/Dense_3[0]/w");
  CHECK(named[5].first == "Serial/Parallel[1]/Dense_2[1]/b");
  CHECK(named[4].second.shape() == Shape{6, 2});
}

TEST_CASE("the same seed gives the same weights; another seed different ones") {
  auto a = Serial(Dense(4), Dense(4)), b = Serial(Dense(4), Dense(4));
  a->init(ShapeDtype{{1, 3}}, Rng(5));
  b->init(ShapeDtype{{1, 3}}, Rng(5));
  expect_close(a->all_weights()[2], b->all_weights()[2], 0);
  CHECK(a->all_weights()[0].to_doubles() != a->all_weights()[2].to_doubles());
  b->init(ShapeDtype{{1, 3}}, Rng(6));
  CHECK(a->all_weights()[0].to_doubles() != b->all_weights()[0].to_doubles());
}

TEST_CASE("a shared layer's weights exist once") {
  auto shared = Dense(3);
  auto model = Serial(shared, shared);
  model->init(ShapeDtype{{2, 3}});
  CHECK(model->all_weights().size() == 2);
  CHECK(model->n_params() == 12);
}

TEST_CASE("a shared Dense used twice gets the summed gradient") {
  auto shared = Dense(2);
  auto twice = Serial(shared, shared);
  twice->init(ShapeDtype{{1, 2}, DType::float64});
  const Tensor x = tensor({1.0, -2.0}, {1, 2});
  const Tensor w = shared->weights()[0], b = shared->weights()[1];
  auto g = grad(sum((*twice)(x)), {w, b});
  // y = (x·W + b)·W + b  ⇒  dy/dW = xᵀ·(1·Wᵀ) + (x·W + b)ᵀ·1 ;  dy/db = 1·Wᵀ + 1
  const Tensor ones = Tensor::ones({1, 2}, DType::float64);
  const Tensor h = matmul(x, w.detach()) + b.detach();
  expect_close(g[0], matmul(x, matmul(ones, w.detach(), false, true), true, false) + matmul(h, ones, true, false), 1e-12);
  expect_close(g[1], reshape(matmul(ones, w.detach(), false, true), {2}) + 1.0, 1e-12);
}

TEST_CASE("eval mode records no tape") {
  auto model = Serial(Dense(2));
  model->init(ShapeDtype{{1, 2}});
  CHECK((*model)(Tensor::ones({1, 2})).requires_grad());
  model->set_mode(Mode::eval);
  CHECK(model->sublayers()[0]->mode() == Mode::eval);
  CHECK_FALSE((*model)(Tensor::ones({1, 2})).requires_grad());
}

TEST_CASE("set_all_weights replaces every weight in place, checking shapes") {
  auto model = Serial(Dense(2));
  model->init(ShapeDtype{{1, 3}});
  model->set_all_weights({Tensor::ones({3, 2}), Tensor::zeros({2})});
  expect_tensor((*model)(Tensor::ones({1, 3})), {1, 2}, {3, 3});
  CHECK_THROWS_AS(model->set_all_weights({Tensor::ones({2, 2}), Tensor::zeros({2})}), std::invalid_argument);
  CHECK_THROWS_AS(model->set_all_weights({Tensor::ones({3, 2})}), std::invalid_argument);
}

TEST_CASE("bind_all_weights and bind_all_state put handles in place and return the old ones; a wrong one changes nothing") {
  auto model = Serial(Dense(2), BatchNorm({.axis = {0}}));
  model->init(ShapeDtype{{4, 3}});
  const std::vector<Tensor> weights = model->all_weights();   // Dense's kernel and bias, BatchNorm's scale and shift
  REQUIRE(weights.size() == 4);
  // A wrong shape anywhere, even in the last weight: refused before any weight is replaced.
  std::vector<Tensor> wrong = {Tensor::ones({3, 2}), Tensor::zeros({2}), Tensor::ones({2}), Tensor::zeros({5})};
  CHECK_THROWS_WITH_AS(model->bind_all_weights(wrong), "bind_all_weights: weight 3 of Serial is f32[2], given f32[5]",
                       std::invalid_argument);
  CHECK(model->all_weights()[0].same_as(weights[0]));
  CHECK_THROWS_WITH_AS(model->bind_all_weights({Tensor::ones({3, 2})}),
                       "bind_all_weights: 1 tensors given, Serial has 4 weights", std::invalid_argument);
  // State: BatchNorm's running mean, variance and count, replaced whole (a state may change shape).
  const auto state = model->named_state();
  REQUIRE(state.size() == 3);
  std::vector<Tensor> saved;
  for (const auto& [name, t] : state) saved.push_back(t.clone());
  (*model)(Rng(1).normal({4, 3}));   // train mode: the statistics move
  CHECK(model->named_state()[0].second.to_doubles() != saved[0].to_doubles());
  const std::vector<Tensor> moved = model->bind_all_state(saved);
  CHECK(moved.size() == 3);
  CHECK(model->named_state()[0].second.same_as(saved[0]));
  CHECK(model->named_state()[2].second.item() == 0);
  CHECK_THROWS_WITH_AS(model->bind_all_state({}), "bind_all_state: 0 tensors given, Serial has 3 state tensors",
                       std::invalid_argument);
}

TEST_CASE("calling a single-output convenience on a multi-output layer explains itself") {
  auto d = Dup();
  d->init(ShapeDtype{{1}});
  CHECK_THROWS_WITH_AS((*d)(v({1})), doctest::Contains("leaves 2 items on the stack"), LayerError);
}

namespace {

// A layer with one weight whose initializer counts its calls, and one state tensor (a counter).
class CountingLayer final : public Layer {
 public:
  explicit CountingLayer(int* draws) : Layer("Counting", 1, 1, std::source_location::current()), draws_(draws) {}

 protected:
  void init_weights_and_state(const Signature& input) override {
    add_weight("w", {input.at(0).shape.back()}, DType::float32,
               [this](const Shape& s, const Rng& rng, DType dt) {
                 ++*draws_;
                 return rng.uniform(s, -1, 1, dt);
               },
               rng());
    state() = {Tensor::scalar(0)};
  }
  Stack forward(const Stack& in) override {
    state()[0] = state()[0] + 1.0;
    return {in[0] * weights()[0]};
  }

 private:
  int* draws_;
};

}  // namespace

TEST_CASE("add_weight draws at init; reset_state keeps the same weight tensors and draws nothing") {
  int draws = 0;
  auto model = Serial(std::make_shared<CountingLayer>(&draws));
  model->init(ShapeDtype{{2, 3}}, Rng(5));
  CHECK(draws == 1);
  CHECK(model->all_weights()[0].requires_grad());
  const Tensor w = model->all_weights()[0];
  (*model)(Tensor::ones({2, 3}));
  CHECK(model->named_state()[0].second.item() == 1.0);
  model->reset_state({ShapeDtype{{4, 3}}});
  CHECK(draws == 1);
  CHECK(model->all_weights()[0].same_as(w));
  CHECK(model->named_state()[0].second.item() == 0.0);   // state re-created
  model->init(ShapeDtype{{2, 3}}, Rng(5));                // init draws again
  CHECK(draws == 2);
  expect_close(model->all_weights()[0], w, 0.0);           // same seed, same values
}

TEST_CASE("reset_state for an input the weights do not fit fails and keeps the weights") {
  int draws = 0;
  auto model = Serial(std::make_shared<CountingLayer>(&draws));
  model->init(ShapeDtype{{2, 3}});
  const Tensor w = model->all_weights()[0];
  CHECK_THROWS_WITH_AS(model->reset_state({ShapeDtype{{2, 5}}}),
                       doctest::Contains("reset_state cannot keep weight w (f32[5]): the layer had f32[3]"),
                       LayerError);
  REQUIRE(model->all_weights().size() == 1);
  CHECK(model->all_weights()[0].same_as(w));
  CHECK(draws == 1);
}

TEST_CASE("init with use_cache: layers already initialised keep their weights, the others draw theirs") {
  int draws = 0;
  auto trained = Serial(std::make_shared<CountingLayer>(&draws));
  trained->init(ShapeDtype{{2, 3}}, Rng(1));
  const Tensor w = trained->all_weights()[0];
  auto head = std::make_shared<CountingLayer>(&draws);
  auto model = Serial(trained, head);                     // Trax: Serial(trained, head)
  model->init(ShapeDtype{{2, 3}}, Rng(9), {.use_cache = true});
  CHECK(draws == 2);                                      // the head's only
  CHECK(model->all_weights()[0].same_as(w));              // the trained weights, the same tensor
  CHECK(head->initialized());
  model->init(ShapeDtype{{2, 3}}, Rng(9));                // without: everything drawn again
  CHECK(draws == 4);
  CHECK_FALSE(model->all_weights()[0].same_as(w));
  // Inputs the kept weights do not fit: an error naming the weight; the weights stay.
  auto wider = Serial(trained, std::make_shared<CountingLayer>(&draws));
  const Tensor kept = trained->all_weights()[0];
  CHECK_THROWS_WITH_AS(wider->init(ShapeDtype{{2, 5}}, Rng(9), {.use_cache = true}),
                       doctest::Contains("init (use_cache) cannot keep weight w (f32[5]): the layer had f32[3]"),
                       LayerError);
  CHECK(trained->all_weights()[0].same_as(kept));
}

TEST_CASE("random trees of combinators: each weight once, kept by init with use_cache and by reset_state") {
  // Trees whose leaves are shared now and then (tests/random_tree.hpp): all_weights lists a shared
  // layer's weights once; init with use_cache — alone, or with a new head around the tree, as
  // Serial(model, loss) — keeps every weight bit for bit and draws the head's; reset_state keeps them.
  int trees = 0, sharing = 0;
  for (unsigned seed = 0; trees < 100 && seed < 2000; ++seed) {
    const LayerPtr tree = RandomTree(seed, {}).layer(2);
    if (tree->n_in() < 1 || tree->n_in() > 5 || tree->n_out() < 1) continue;
    ++trees;
    CAPTURE(seed);
    Signature signature(static_cast<std::size_t>(tree->n_in()), ShapeDtype{{2, 3, 4}});
    tree->init(signature, Rng(5));
    const std::vector<Tensor> weights = tree->all_weights();
    std::vector<std::vector<double>> values;
    for (std::size_t i = 0; i < weights.size(); ++i) {
      values.push_back(weights[i].to_doubles());
      for (std::size_t j = 0; j < i; ++j) CHECK_FALSE(weights[i].same_as(weights[j]));
    }
    const auto kept = [&](const std::vector<Tensor>& now) {
      REQUIRE(now.size() >= weights.size());
      for (std::size_t i = 0; i < weights.size(); ++i) CHECK(now[i].to_doubles() == values[i]);
    };
    tree->init(signature, Rng(9), {.use_cache = true});
    kept(tree->all_weights());
    auto head = Dense(4);
    auto model = Serial(tree, head);
    model->init(signature, Rng(9), {.use_cache = true});
    kept(model->all_weights());
    CHECK(model->all_weights().size() == weights.size() + 2);
    model->reset_state(signature);
    kept(model->all_weights());
    // A tree that uses a layer twice counts its weights once.
    std::size_t visits = 0;
    const auto count = [&](const Layer& l, const auto& self) -> void {
      visits += l.weights().size();
      for (const LayerPtr& s : l.sublayers()) self(*s, self);
    };
    count(*tree, count);
    if (visits > weights.size()) ++sharing;
  }
  CHECK(trees == 100);
  CHECK(sharing > 5);
}
