// The execution plan (core/layer/plan.hpp): fused steps compute exactly what the tree computes,
// op by op — values, gradients and state, on every model of the registry and on random trees of
// combinators — and the switch, the printed plan and the error paths.
#include <doctest/doctest.h>

#include <functional>
#include <span>

#include "core/decode/sampling.hpp"
#include "core/layer/combinators.hpp"
#include "core/layer/fn.hpp"
#include "core/layer/gradcheck.hpp"
#include "core/layer/plan.hpp"
#include "core/layer/trace.hpp"
#include "core/tensor/ops.hpp"
#include "layers/activations.hpp"
#include "layers/batch_norm.hpp"
#include "layers/causal_attention.hpp"
#include "layers/dense.hpp"
#include "layers/dropout.hpp"
#include "models/registry.hpp"
#include "tests/helpers.hpp"
#include "tests/random_tree.hpp"

using namespace ctrax;

namespace {

// The plan on, whatever CTRAX_PLAN says (a layer takes its default from it when built): these tests
// are the plan's, so they turn it on themselves, as a user would with set_execution_plan(true).
LayerPtr planned(LayerPtr layer) {
  layer->set_execution_plan(true);
  return layer;
}

struct Run {
  Stack outputs;
  std::vector<Tensor> grads, state;
};

// One training-mode step of `model` on `inputs` (dropout drawn from the same rng each time):
// its outputs, the gradient of Σ outputs₀ · r (r fixed, random) for every weight and every float
// input, and its state after.
Run run(const LayerPtr& model, const Stack& given, bool plan) {
  model->set_execution_plan(plan);
  model->set_rng(Rng(11));
  Stack inputs;
  std::vector<Tensor> wrt = model->all_weights();
  for (const Tensor& x : given) {
    inputs.push_back(is_floating(x.dtype()) ? x.detach().requires_grad_() : x);
    if (is_floating(x.dtype())) wrt.push_back(inputs.back());
  }
  Run r;
  r.outputs = (*model)(inputs);
  const Tensor& y = r.outputs[0];
  if (model->mode() == Mode::train && is_floating(y.dtype())) {
    const Tensor seed = testing::randn(y.shape(), 3).to(y.dtype());
    r.grads = grad(y, wrt, {.seed = seed});
  }
  for (const auto& [name, t] : model->named_state()) r.state.push_back(t);
  return r;
}

void expect_identical(const Run& a, const Run& b) {
  REQUIRE(a.outputs.size() == b.outputs.size());
  for (std::size_t i = 0; i < a.outputs.size(); ++i) CHECK(a.outputs[i].to_doubles() == b.outputs[i].to_doubles());
  REQUIRE(a.grads.size() == b.grads.size());
  for (std::size_t i = 0; i < a.grads.size(); ++i) CHECK(a.grads[i].to_doubles() == b.grads[i].to_doubles());
  REQUIRE(a.state.size() == b.state.size());
  for (std::size_t i = 0; i < a.state.size(); ++i) CHECK(a.state[i].to_doubles() == b.state[i].to_doubles());
}

// The plan and the tree from the same weights and state: the same bits, in train and in eval mode.
void expect_plan_equals_tree(const std::function<LayerPtr()>& make, const Stack& inputs) {
  auto plan = planned(make()), tree = make();
  plan->init(signature_of(inputs), Rng(5));
  tree->init(signature_of(inputs), Rng(5));
  for (Mode mode : {Mode::train, Mode::eval}) {
    plan->set_mode(mode);
    tree->set_mode(mode);
    expect_identical(run(plan, inputs, true), run(tree, inputs, false));
  }
}

// The error `model` gives `inputs` with the plan on or off; "" when it gives none.
std::string error_of(const LayerPtr& model, const Stack& inputs, bool plan) {
  model->set_execution_plan(plan);
  try {
    (*model)(inputs);
  } catch (const LayerError& e) {
    return e.what();
  }
  return "";
}

// The error `model` gives `input` with the plan on, then off (each call must throw).
std::vector<std::string> errors_plan_on_and_off(const LayerPtr& model, const Tensor& input) {
  std::vector<std::string> errors;
  for (const bool plan : {true, false}) {
    model->set_execution_plan(plan);
    try {
      (*model)(input);
      FAIL("no error");
    } catch (const LayerError& e) {
      errors.emplace_back(e.what());
    }
  }
  return errors;
}

Tensor image(std::int64_t B, std::int64_t H, std::int64_t C, DType dtype) {
  return testing::randn({B, H, H, C}, 7).to(dtype);
}

}  // namespace

TEST_CASE("plan: BatchNorm then Relu is one step with the tree's values, gradients and running statistics") {
  // Literal values: 2 × 3 rows of 2 channels; channel 0 has mean 2, channel 1 mean 0.
  const Tensor x = Tensor::from_doubles({1, -1, 2, 0, 3, 1, 1, -2, 2, 0, 3, 2}, {2, 3, 2}, DType::float64);
  auto make = [] { return layers::Serial(layers::BatchNorm({.axis = {0, 1}}), layers::Relu()); };
  auto model = planned(make());
  model->init(signature_of(Stack{x}));
  // x̂ of channel 0 is (x − 2)/√(2/3 + ε): the rows at 1 fall below 0 and Relu zeroes them.
  const Tensor y = (*model)(x);
  const std::vector<double> out = y.to_doubles();
  const double s0 = 1 / std::sqrt(2.0 / 3 + 1e-5), s1 = 1 / std::sqrt(10.0 / 6 + 1e-5);
  const std::vector<double> expected{0, 0, 0, 0, s0, s1, 0, 0, 0, 0, s0, 2 * s1};
  for (std::size_t i = 0; i < out.size(); ++i) CHECK(out[i] == doctest::Approx(expected[i]).epsilon(1e-12));
  expect_plan_equals_tree(make, {x});
  expect_plan_equals_tree(make, {image(3, 5, 16, DType::float32)});
  // The fused step itself (not only the Serial that asks for it) runs and agrees.
  auto bn = planned(layers::BatchNorm({.axis = {0, 1}})), relu = planned(layers::Relu());
  bn->init(signature_of(Stack{x}));
  relu->init(signature_of(Stack{x}));
  const std::vector<LayerPtr> next{relu};
  REQUIRE(bn->fuses_with(nullptr, next).has_value());
  const std::optional<Stack> fused = bn->call_fused(nullptr, next, Stack{x, x});
  REQUIRE(fused.has_value());
  CHECK(fused->size() == 2);   // the item below BatchNorm's input rides along
  CHECK((*fused)[0].to_doubles() == out);
}

TEST_CASE("plan: Relu then Dropout is one step with the tree's mask, values and gradients") {
  // Literal values: with rate 0.5 a kept value doubles; the mask is the Dropout layer's own draw.
  const Tensor x = Tensor::from_doubles({1, -2, 3, 0, -0.5, 4, 2, -1}, {2, 4}, DType::float64);
  auto make = [] { return layers::Serial(layers::Relu(), layers::Dropout({.rate = 0.5})); };
  auto model = planned(make());
  model->init(signature_of(Stack{x}));
  model->set_rng(Rng(3));
  REQUIRE(plan_to_string(*model) == "Serial[\n  Relu + Dropout   (one step)\n]");
  const std::vector<double> y = (*model)(x).to_doubles();
  int kept = 0;
  const std::vector<double> xs = x.to_doubles();
  for (std::size_t i = 0; i < y.size(); ++i) {
    CAPTURE(i);
    const double r = xs[i] > 0 ? xs[i] : 0;
    CHECK((y[i] == 2 * r || y[i] == 0));
    kept += y[i] != 0;
  }
  CHECK(kept > 0);   // of the 4 positive inputs, this key keeps some and drops others
  CHECK(kept < 4);
  expect_plan_equals_tree(make, {x});
  expect_plan_equals_tree(make, {image(3, 5, 16, DType::float32)});
  // Shared axes: the mask broadcasts and the step is the two ops one after the other.
  expect_plan_equals_tree([] { return layers::Serial(layers::Relu(), layers::Dropout({.rate = 0.3, .shared_axes = {1}})); },
                          {image(3, 5, 4, DType::float64)});
  // Rate 0, and eval mode: the Dropout is the identity and nothing is fused.
  CHECK_FALSE(layers::Relu()->fuses_with(nullptr, std::vector<LayerPtr>{layers::Dropout({.rate = 0.0})}));
  CHECK_FALSE(layers::Relu()->fuses_with(nullptr, std::vector<LayerPtr>{layers::Dropout({.rate = 0.5, .mode = Mode::eval})}));
}

TEST_CASE("plan: Dense, Relu, Dropouts that pass through, Dense are one step with the tree's values and gradients") {
  // Literal values: w1 = [[1, -1], [2, 0]], b1 = (0, 1); w2 = [[1], [3]], b2 = (−1).
  // x = (1, 1): h = (3, 0) → relu (3, 0) → y = 3 − 1 = 2;  x = (−1, 0): h = (−1, 2) → (0, 2) → 5.
  const Tensor x = Tensor::from_doubles({1, 1, -1, 0}, {2, 2}, DType::float64);
  auto make = [] {
    return layers::Serial(layers::Dense(2), layers::Relu(), layers::Dropout({.rate = 0.0}), layers::Dense(1));
  };
  auto model = planned(make());
  model->init(signature_of(Stack{x}));
  REQUIRE(plan_to_string(*model) == "Serial[\n  Dense_2 + Relu + Dropout + Dense_1   (one step)\n]");
  model->set_all_weights({Tensor::from_doubles({1, -1, 2, 0}, {2, 2}, DType::float64),
                          Tensor::from_doubles({0, 1}, {2}, DType::float64),
                          Tensor::from_doubles({1, 3}, {2, 1}, DType::float64),
                          Tensor::from_doubles({-1}, {1}, DType::float64)});
  CHECK((*model)(x).to_doubles() == std::vector<double>{2, 5});
  expect_plan_equals_tree(make, {x});
  expect_plan_equals_tree(make, {testing::randn({3, 4, 2}, 8).to(DType::float32)});
  testing::expect_layer_gradients(model, {x + 0.25});   // away from the ReLU's kink
  // A Dropout that drops (training) leaves the first Dense and the Relu to their rule with it; the
  // feed-forward block of a model built for decoding, whose Dropouts pass through, is one step.
  auto dropping =
      planned(layers::Serial(layers::Dense(2), layers::Relu(), layers::Dropout({.rate = 0.5}), layers::Dense(1)));
  dropping->init(signature_of(Stack{x}));
  CHECK(plan_to_string(*dropping) == "Serial[\n  Dense_2 + Relu + Dropout   (one step)\n  Dense_1\n]");
  dropping->set_mode(Mode::predict);
  CHECK(plan_to_string(*dropping) == "Serial[\n  Dense_2 + Relu + Dropout + Dense_1   (one step)\n]");
  // A Dense without a bias is not a linear: nothing is fused.
  auto no_bias = planned(layers::Serial(layers::Dense(2, {.use_bias = false}), layers::Relu(), layers::Dense(1)));
  CHECK(plan_to_string(*no_bias) == no_bias->to_string());
  // Bad input: the step declines and the tree's error names the first Dense.
  CHECK_THROWS_WITH_AS((*model)(Tensor::zeros({2, 3}, DType::float64)),
                       doctest::Contains("layer Serial/Dense_2[0] (in forward)"), LayerError);

  // A decoded token's one row: both products and the ReLU in one team job (d_ff · d_model reaches
  // the team's size), plan and tree the same bits, token by token, and the same greedy tokens
  // from the decoder, which packs the weights.
  const models::ModelSpec spec{.name = "TransformerLM", .vocab_size = 11,
                               .config = {.d_model = 64, .d_ff = 512, .n_layers = 2, .n_heads = 2, .max_len = 16}};
  auto plan = planned(models::build(spec, Mode::predict)), tree = models::build(spec, Mode::predict);
  const Tensor first = Tensor::from_doubles({3}, {1, 1}, DType::int32);
  plan->init(signature_of(Stack{first}), Rng(5));
  tree->init(signature_of(Stack{first}), Rng(5));
  tree->set_execution_plan(false);
  REQUIRE(plan_to_string(*plan).find("Dense_512 + Relu + Dropout + Dense_64   (one step)") != std::string::npos);
  const NoGrad no_grad;   // as the decoders run (the Dense layers of a predict-mode model are not in predict mode)
  for (int t = 0; t < 5; ++t) {
    const Tensor token = Tensor::from_doubles({double(t + 2)}, {1, 1}, DType::int32);
    CHECK((*plan)(token).to_doubles() == (*tree)(token).to_doubles());
  }
  const Tensor a = decode::autoregressive_sample(*plan, first, 1, {.eos_id = -1, .max_length = 12});
  const Tensor b = decode::autoregressive_sample(*tree, first, 1, {.eos_id = -1, .max_length = 12});
  CHECK(a.to_doubles() == b.to_doubles());
}

TEST_CASE("plan: Dense, Relu, Dropout (training) are one step with the tree's mask, values and gradients") {
  // Literal values: w = [[1, -1], [2, 0]], b = (0, 1): x = (1, 1) → (3, 0), x = (−1, 0) → (−1, 2); relu
  // (3, 0), (0, 2); rate 0.5 doubles what is kept.
  const Tensor x = Tensor::from_doubles({1, 1, -1, 0}, {2, 2}, DType::float64);
  auto make = [](std::int64_t n) {
    return layers::Serial(layers::Dense(n), layers::Relu(), layers::Dropout({.rate = 0.5}));
  };
  auto model = planned(make(2));
  model->init(signature_of(Stack{x}));
  model->set_rng(Rng(3));
  REQUIRE(plan_to_string(*model) == "Serial[\n  Dense_2 + Relu + Dropout   (one step)\n]");
  model->set_all_weights({Tensor::from_doubles({1, -1, 2, 0}, {2, 2}, DType::float64),
                          Tensor::from_doubles({0, 1}, {2}, DType::float64)});
  const std::vector<double> y = (*model)(x).to_doubles();
  const std::vector<double> relu_h{3, 0, 0, 2};
  for (std::size_t i = 0; i < y.size(); ++i) CHECK((y[i] == 2 * relu_h[i] || y[i] == 0));
  expect_plan_equals_tree([&] { return make(2); }, {x});
  // Float32 and rows enough for our own kernel's team product (where the CPU has AVX-512): the ReLU
  // and the mask on each stripe of rows as it is made, a K of two chunks, a column tail.
  expect_plan_equals_tree([&] { return make(70); }, {testing::randn({2, 100, 600}, 8).to(DType::float32)});
  expect_plan_equals_tree([&] { return make(256); }, {testing::randn({4, 64, 96}, 9).to(DType::float32)});
  // Bad input: the step declines and the tree's error names the Dense.
  CHECK_THROWS_WITH_AS((*model)(Tensor::zeros({2, 3}, DType::float64)),
                       doctest::Contains("layer Serial/Dense_2[0] (in forward)"), LayerError);
}

TEST_CASE("plan: a fused step's gradient passes the shared finite-difference check") {
  auto model = planned(layers::Serial(layers::BatchNorm(), layers::Relu()));
  const Tensor x = image(2, 3, 2, DType::float64);
  model->init(signature_of(Stack{x}));
  REQUIRE(model->execution_plan());
  testing::expect_layer_gradients(model, {x});
  // Relu + Dropout: inputs away from Relu's kink, the mask fixed by the layer's rng.
  auto dropped = planned(layers::Serial(layers::Relu(), layers::Dropout({.rate = 0.25})));
  const Tensor z = image(2, 3, 2, DType::float64) + 0.05;
  dropped->init(signature_of(Stack{z}));
  dropped->set_rng(Rng(9));
  REQUIRE(plan_to_string(*dropped) == "Serial[\n  Relu + Dropout   (one step)\n]");
  testing::expect_layer_gradients(dropped, {z});
  // Dense + Relu + Dropout: the same, with the Dense's weights.
  auto dense_dropped = planned(layers::Serial(layers::Dense(3), layers::Relu(), layers::Dropout({.rate = 0.25})));
  dense_dropped->init(signature_of(Stack{z}));
  dense_dropped->set_rng(Rng(9));
  REQUIRE(plan_to_string(*dense_dropped) == "Serial[\n  Dense_3 + Relu + Dropout   (one step)\n]");
  testing::expect_layer_gradients(dense_dropped, {z});
}

TEST_CASE("plan: a Branch runs its Select and Parallel as one step with the tree's values, gradients and errors") {
  // Residual(Dense_2) = Serial(Branch(None, Dense_2), Add). Literal values: w = [[1, 2], [0, -1]],
  // b = (1, 0); x = (1, 1): Dense → (2, 1), plus x → (3, 2).
  const Tensor x = Tensor::from_doubles({1, 1}, {1, 2}, DType::float64);
  auto make = [] { return layers::Residual(layers::Dense(2)); };
  auto model = planned(make());
  model->init(signature_of(Stack{x}));
  CHECK(model->to_string() == "Serial[\n  Branch_out2[\n    None\n    Dense_2\n  ]\n  Add_in2\n]");
  CHECK(plan_to_string(*model) == "Serial[\n  Branch_out2[\n    Select[0,0]_out2 + Parallel_in2_out2[\n      Serial\n"
                                  "      Dense_2\n    ]   (one step)\n  ]\n  Add_in2\n]");
  model->set_all_weights({Tensor::from_doubles({1, 2, 0, -1}, {2, 2}, DType::float64),
                          Tensor::from_doubles({1, 0}, {2}, DType::float64)});
  CHECK((*model)(x).to_doubles() == std::vector<double>{3, 2});
  expect_plan_equals_tree(make, {x});
  expect_plan_equals_tree(make, {testing::randn({3, 4, 2}, 8).to(DType::float32)});
  testing::expect_layer_gradients(model, {x});
  // Branches of several inputs, and a stack item below them: Branch(Sub, None) on (5, 2, 7) picks
  // (5, 2) for Sub and 5 for None, and 7 waits below — (3, 5, 7), plan on and off.
  auto branch = planned(
      layers::Branch(layers::Fn("Sub", [](layers::TensorArg a, layers::TensorArg b) { return a - b; }), nullptr));
  const Stack three{Tensor::from_doubles({5}, {1}, DType::float64), Tensor::from_doubles({2}, {1}, DType::float64),
                    Tensor::from_doubles({7}, {1}, DType::float64)};
  branch->init(signature_of(three));
  CHECK(plan_to_string(*branch) ==
        "Branch_in2_out2[\n  Select[0,1,0]_in2_out3 + Parallel_in3_out2[\n    Sub_in2\n    Serial\n  ]   (one step)\n]");
  for (bool on : {true, false}) {
    branch->set_execution_plan(on);
    Stack out = (*branch)(three);
    REQUIRE(out.size() == 3);
    CHECK(out[0].item() == 3);
    CHECK(out[1].item() == 5);
    CHECK(out[2].item() == 7);
  }
  // A branch's error gets the tree's path, plan on or off: the branch's index, the Parallel, the
  // Parallel's index in the Branch.
  const std::vector<std::string> errors = errors_plan_on_and_off(model, Tensor::zeros({1, 3}, DType::float64));
  REQUIRE(errors.size() == 2);
  CHECK(errors[0] == errors[1]);
  CHECK(errors[0].find("layer Serial/Branch[0]/Parallel[1]/Dense_2[1] (in forward)") != std::string::npos);
  // A Parallel whose mode does not record (its apply turns recording off) around a Dense that
  // would, inside a Branch that records: the step stands aside, and the Dense's output carries
  // no gradient, as in the tree.
  model->set_execution_plan(true);
  model->set_mode(Mode::train);
  const LayerPtr& parallel = model->sublayers()[0]->sublayers()[1];
  parallel->set_mode(Mode::eval);
  parallel->sublayers()[1]->set_mode(Mode::train);
  const Tensor xg = x.detach().requires_grad_();
  const Stack parts = (*model->sublayers()[0])(Stack{xg});
  CHECK(parts[0].requires_grad());
  CHECK_FALSE(parts[1].requires_grad());
}

TEST_CASE("plan: the printed plan marks the fused steps; the tree prints as Trax's") {
  auto model = planned(
      layers::Serial(layers::BatchNorm(), layers::Relu(), layers::Relu(), layers::BatchNorm(), layers::Relu()));
  CHECK(model->to_string() == "Serial[\n  BatchNorm\n  Relu\n  Relu\n  BatchNorm\n  Relu\n]");
  CHECK(plan_to_string(*model) ==
        "Serial[\n  BatchNorm + Relu   (one step)\n  Relu\n  BatchNorm + Relu   (one step)\n]");
  model->set_execution_plan(false);
  CHECK(plan_to_string(*model) == model->to_string());
  // Eval mode has nothing to fuse (BatchNorm's running statistics make it an affine map).
  auto eval = planned(layers::Serial(layers::BatchNorm({.mode = Mode::eval}), layers::Relu()));
  CHECK(plan_to_string(*eval) == eval->to_string());
}

TEST_CASE("plan: CTRAX_PLAN takes 1 or 0, and any other value is an error naming it") {
  CHECK(plan_setting(nullptr));
  CHECK(plan_setting(""));
  CHECK(plan_setting("1"));
  CHECK_FALSE(plan_setting("0"));
  CHECK_THROWS_WITH_AS(plan_setting("off"),
                       "CTRAX_PLAN: expected 1 (the execution plan on) or 0 (the tree op by op), got 'off'",
                       std::invalid_argument);
}

TEST_CASE("plan: a Trace sees every layer; bad input gets the tree's own error") {
  auto model = planned(layers::Serial(layers::BatchNorm(), layers::Relu()));
  model->init(ShapeDtype{{2, 4, 4, 3}});
  {
    Trace trace;
    (*model)(image(2, 4, 3, DType::float32));
    CHECK(trace.to_string().find("Relu") != std::string::npos);
  }
  // Rank 3 where BatchNorm was built for rank 4: the fused step declines, BatchNorm reports it.
  try {
    (*model)(Tensor::zeros({2, 4, 3}));
    FAIL("no error");
  } catch (const LayerError& e) {
    const std::string what = e.what();
    CHECK(what.find("layer Serial/BatchNorm[0] (in forward)") != std::string::npos);
    CHECK(what.find("BatchNorm was initialised for rank 4, got f32[2,4,3]") != std::string::npos);
  }
}

TEST_CASE("plan: every model of the registry, plan on and off, computes the same bits") {
  using models::ModelSpec;
  const models::TransformerConfig small{.d_model = 8, .d_ff = 16, .n_layers = 2, .n_encoder_layers = 2,
                                        .n_decoder_layers = 1, .n_heads = 2, .max_len = 12, .dropout = 0.1};
  const Tensor tokens = Tensor::from_doubles({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 1, 2}, {2, 6}, DType::int32);
  const Tensor targets = Tensor::from_doubles({3, 4, 5, 6, 1, 2, 3, 4, 5, 6}, {2, 5}, DType::int32);
  const Tensor positions = Tensor::from_doubles({0, 2, 1, 4}, {2, 2}, DType::int32);
  const std::vector<std::pair<ModelSpec, Stack>> cases{
      {{.name = "TransformerLM", .vocab_size = 11, .config = small}, {tokens}},
      {{.name = "TransformerEncoder", .vocab_size = 11, .n_classes = 3, .config = small}, {tokens}},
      {{.name = "Transformer", .vocab_size = 11, .output_vocab_size = 7, .config = small}, {tokens, targets}},
      {{.name = "MaskedLM", .vocab_size = 11, .config = small}, {tokens, positions}},
      {{.name = "GRULM", .vocab_size = 11, .config = small}, {tokens}},
      {{.name = "RNNLM", .vocab_size = 11, .config = small}, {tokens}},
      {{.name = "LSTMSeq2SeqAttn", .vocab_size = 11, .config = small, .decoder_layers = 1}, {tokens, targets}},
      {{.name = "SentenceCNN", .vocab_size = 11, .n_classes = 3, .config = small, .n_filters = 4}, {tokens}},
      {{.name = "MLP", .n_classes = 10, .layer_widths = {32, 16}}, {image(2, 28, 1, DType::float64)}},
      {{.name = "WideResnet", .n_classes = 10, .n_blocks = 1, .widen_factor = 1}, {image(2, 32, 1, DType::float32)}},
      {{.name = "ConvNet", .n_classes = 10, .config = {.dropout = 0.2}, .filters = {16, 32}, .n_blocks = 2},
       {image(2, 28, 1, DType::float32)}},
  };
  CHECK(cases.size() == models::model_names().size());
  for (const auto& [spec, inputs] : cases) {
    CAPTURE(spec.name);
    expect_plan_equals_tree([&] { return models::build(spec, Mode::train); }, inputs);
    // Built for eval, as `eval` commands build them: the mode on the layers that use it alone,
    // the plumbing at the default — the plan takes such runs outside training (core/layer/layer.cpp).
    auto plan = planned(models::build(spec, Mode::eval)), tree = models::build(spec, Mode::eval);
    plan->init(signature_of(inputs), Rng(5));
    tree->init(signature_of(inputs), Rng(5));
    tree->set_execution_plan(false);
    CHECK((*plan)(inputs)[0].to_doubles() == (*tree)(inputs)[0].to_doubles());
  }
}

TEST_CASE("plan: CausalAttention's projections, attention and MergeHeads are one step, heads read in place") {
  const Tensor x = testing::randn({2, 7, 8}, 4);
  auto make = [] { return layers::CausalAttention(8, {.n_heads = 2, .dropout = 0.25}); };
  auto model = planned(make());
  model->init(signature_of(Stack{x}));
  CHECK(plan_to_string(*model) ==
        "Serial[\n  Branch_out3 + DotProductCausalAttention_in3 + MergeHeads   (one step)\n  Dense_8\n]");
  // The step itself runs (it does not decline) and gives the tree's bits, dropout mask included.
  const auto& parts = model->sublayers();   // Branch, DotProductCausalAttention, MergeHeads, Dense
  model->set_rng(Rng(3));
  const std::optional<Stack> fused =
      parts[1]->call_fused(parts[0].get(), std::span<const LayerPtr>(parts).subspan(2, 1), Stack{x});
  REQUIRE(fused.has_value());
  CHECK((*fused)[0].to_doubles() == (*parts[2])((*parts[1])((*parts[0])(Stack{x})))[0].to_doubles());
  expect_plan_equals_tree(make, {x});
  expect_plan_equals_tree(make, {testing::randn({3, 70, 8}, 5).to(DType::float32)});   // two query blocks
  // Rotary projections end in Rotate, not SplitIntoHeads: the rule does not apply (the Branch
  // still runs its Select and Parallel as one step).
  auto rotary = planned(layers::CausalAttention(8, {.n_heads = 2, .rotary = true}));
  rotary->init(signature_of(Stack{x}));
  CHECK(plan_to_string(*rotary).find("DotProductCausalAttention_in3 + MergeHeads") == std::string::npos);
  // Its gradient passes the shared finite-difference check.
  model->set_rng(Rng(9));
  testing::expect_layer_gradients(model, {x});
  // Bad input: the step declines and the tree's error names the Dense inside the Branch, the same
  // words with the plan on and off.
  const std::vector<std::string> errors = errors_plan_on_and_off(model, testing::randn({2, 7, 5}, 6));
  REQUIRE(errors.size() == 2);
  CHECK(errors[0] == errors[1]);
  CHECK(errors[0].find("layer Serial/Branch[0]/Parallel[1]/Serial[0]/Dense_8[0] (in forward)") != std::string::npos);
}

TEST_CASE("plan: decoding with the KV cache, plan on and off, gives the same bits, the prompt and each token") {
  // The predict-mode step (layers/causal_attention.cpp) writes the new keys and values into the
  // cache from where the projections put them and attends in place.
  // Built for eval or decoding, CausalAttention gives its mode to DotProductCausalAttention alone
  // (the Branch, its Dense layers and MergeHeads stay at the default): the step still runs.
  const Tensor x = testing::randn({2, 3, 8}, 4);
  LayerPtr attention;
  for (const Mode mode : {Mode::eval, Mode::predict}) {
    attention = planned(layers::CausalAttention(8, {.n_heads = 2, .max_inference_length = 6, .mode = mode}));
    attention->init(signature_of(Stack{x}));
    const auto& parts = attention->sublayers();   // Branch, DotProductCausalAttention, MergeHeads, Dense
    CHECK(parts[0]->mode() == Mode::train);
    const std::optional<Stack> fused =
        parts[1]->call_fused(parts[0].get(), std::span<const LayerPtr>(parts).subspan(2, 1), Stack{x});
    REQUIRE(fused.has_value());   // the step runs: it does not decline
    CHECK((*fused)[0].shape() == Shape{2, 3, 8});
  }
  // A cache too short for the next chunk: the step declines, and the tree gives its error.
  CHECK_THROWS_WITH_AS((*attention)(testing::randn({2, 4, 8}, 5)), doctest::Contains("max_inference_length = 6"),
                       LayerError);

  const models::TransformerConfig small{.d_model = 8, .d_ff = 16, .n_layers = 2, .n_encoder_layers = 2,
                                        .n_decoder_layers = 2, .n_heads = 2, .max_len = 12, .dropout = 0.1};
  models::TransformerConfig alibi = small;
  alibi.positions = models::Positions::linear_bias;
  const Tensor prompt = Tensor::from_doubles({1, 2, 3, 4, 5, 6, 7, 8}, {2, 4}, DType::int32);
  const Tensor source = Tensor::from_doubles({4, 7, 2, 9, 0, 5, 3, 8, 1, 6}, {2, 5}, DType::int32);
  const std::vector<models::ModelSpec> specs{
      {.name = "TransformerLM", .vocab_size = 11, .config = small},
      {.name = "TransformerLM", .vocab_size = 11, .config = alibi},
      {.name = "Transformer", .vocab_size = 11, .output_vocab_size = 11, .config = small},
  };
  for (const models::ModelSpec& spec : specs) {
    CAPTURE(spec.name);
    const bool lm = spec.name == "TransformerLM";
    auto plan = planned(models::build(spec, Mode::predict)), tree = models::build(spec, Mode::predict);
    const auto inputs = [&](const Tensor& tokens) { return lm ? Stack{tokens} : Stack{source, tokens}; };
    plan->init(signature_of(inputs(prompt)), Rng(5));
    tree->init(signature_of(inputs(prompt)), Rng(5));
    tree->set_execution_plan(false);
    // The prompt as one chunk (a causal mask over it), then a token at a time.
    CHECK((*plan)(inputs(prompt))[0].to_doubles() == (*tree)(inputs(prompt))[0].to_doubles());
    for (int t = 0; t < 4; ++t) {
      const Tensor token = Tensor::from_doubles({double(t + 1), double(9 - t)}, {2, 1}, DType::int32);
      CHECK((*plan)(inputs(token))[0].to_doubles() == (*tree)(inputs(token))[0].to_doubles());
    }
    const auto a = plan->named_state(), b = tree->named_state();
    REQUIRE(a.size() == b.size());
    for (std::size_t i = 0; i < a.size(); ++i) CHECK(a[i].second.to_doubles() == b[i].second.to_doubles());
  }
}

TEST_CASE("plan: random trees of combinators compute the tree's bits, shapes and finite-difference gradients") {
  // The rules' tests above each take one run in one context; a user's tree puts them anywhere — in a
  // Branch, under a Residual, after a Select, with items riding below, with a Dropout built for eval
  // in a model that trains. Each tree here is built twice from its seed, so plan and tree start from
  // the same weights, and each must give: the plan's bits equal to the tree's (outputs, every
  // gradient, the state after) in the modes it was built with, then all in train, then all in eval;
  // the shapes output_signature inferred; the tree's error for an input of the wrong width; and, for
  // the first 40, gradients that pass the shared finite-difference check (in train: a layer draws
  // the same dropout mask at every call until its rng is set again; eval runs record no gradient).
  int trees = 0, with_fused_steps = 0, checked = 0, refused = 0;
  for (unsigned seed = 0; trees < 300 && seed < 5000; ++seed) {
    const auto make = [seed] { return testing::RandomTree(seed, {}).layer(2); };
    const LayerPtr plan = planned(make()), tree = make();
    if (plan->n_in() < 1 || plan->n_in() > 5 || plan->n_out() < 1 || plan->n_out() > 6) continue;
    ++trees;
    CAPTURE(seed);
    Stack inputs;
    for (int i = 0; i < plan->n_in(); ++i) inputs.push_back(testing::randn({2, 3, 4}, 100 + i));
    plan->init(signature_of(inputs), Rng(5));
    tree->init(signature_of(inputs), Rng(5));
    CAPTURE(plan_to_string(*plan));
    if (plan_to_string(*plan).find("(one step)") != std::string::npos) ++with_fused_steps;
    const Signature inferred = plan->output_signature(signature_of(inputs));
    const Run built = run(plan, inputs, true);
    CHECK(signature_of(built.outputs) == inferred);
    expect_identical(built, run(tree, inputs, false));
    for (Mode mode : {Mode::train, Mode::eval}) {
      plan->set_mode(mode);
      tree->set_mode(mode);
      expect_identical(run(plan, inputs, true), run(tree, inputs, false));
    }
    // One input 5 wide where the weights were made for 4: the plan's error is the tree's, word for
    // word (the layer's path, where it was created, the shapes), or neither refuses it.
    Stack bad = inputs;
    bad[seed % bad.size()] = testing::randn({2, 3, 5}, 300);
    const std::string plan_error = error_of(plan, bad, true), tree_error = error_of(tree, bad, false);
    CHECK(plan_error == tree_error);
    if (!plan_error.empty()) ++refused;
    if (checked < 40) {
      ++checked;
      plan->set_execution_plan(true);
      plan->set_mode(Mode::train);
      plan->set_rng(Rng(11));
      // Weights drawn at 0.5, away from Relu's kink: Trax's biases start at 1e-6, the differences'
      // own step, and a row Relu and Dropout zeroed reaches the next Relu as that bias alone.
      std::vector<Tensor> spread;
      for (const Tensor& w : plan->all_weights()) spread.push_back(testing::randn(w.shape(), 200 + spread.size()) * 0.5);
      plan->bind_all_weights(spread);
      const GradCheckResult r = check_layer_gradients(plan, inputs);
      CHECK_MESSAGE(r.ok, r.report);
    }
  }
  // Not a test that cannot fail by having nothing to test: most trees fuse.
  CHECK(trees == 300);
  CHECK(with_fused_steps > trees / 2);
  CHECK(refused > trees / 2);
}
