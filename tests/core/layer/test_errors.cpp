#include <doctest/doctest.h>

#include <fmt/format.h>

#include "layers/attention.hpp"
#include "layers/causal_attention.hpp"
#include "layers/dense.hpp"
#include "layers/rnn.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::testing;
using namespace ctrax::layers;

namespace {
// The LayerError f throws (REQUIREs that it throws one).
LayerError layer_error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const LayerError& e) {
    return e;
  }
  FAIL("no LayerError was thrown");
  throw std::logic_error("unreachable");
}
std::string error_of(const std::function<void()>& f) { return layer_error_of(f).what(); }
}  // namespace

TEST_CASE("a shape mismatch names the path, the method, the creation site and the shapes") {
  auto model = Serial(Dense(4), Serial(Dense(3), Dense(2)));
  model->init(ShapeDtype{{2, 5}});
  // Weights expect 5 features; feed 6.
  const std::string msg = error_of([&] { (*model)(Tensor::zeros({2, 6})); });
  CHECK(msg.find("LayerError: Exception passing through layer Serial/Dense_4[0] (in forward)") != std::string::npos);
  CHECK(msg.find("layer created at tests/core/layer/test_errors.cpp:") != std::string::npos);
  CHECK(msg.find("layer input shapes: (f32[2,6])") != std::string::npos);
  CHECK(msg.find("Dense_4 expects inputs (..., 5), got f32[2,6]") != std::string::npos);
}

TEST_CASE("errors at init are caught with shapes before any data flows") {
  auto model = Serial(Dense(4), Fn("Bad", [](const Tensor& x) { return x + Tensor::zeros({3}); }));
  const LayerError error = layer_error_of([&] { model->init(ShapeDtype{{2, 5}}); });
  CHECK(error.path() == "Serial/Bad[1]");
  CHECK(error.method() == "init");
  CHECK(error.message() == "add: shapes (2, 4) and (3,) cannot be broadcast together");
}

TEST_CASE("too few inputs") {
  auto model = Serial(Dense(2), Add());
  model->init({ShapeDtype{{1, 2}}, ShapeDtype{{1, 2}}});
  const std::string msg = error_of([&] { (*model)(Stack{Tensor::zeros({1, 2})}); });
  CHECK(msg.find("number of inputs (1) to Serial.forward less than n_in (2)") != std::string::npos);
}

TEST_CASE("calling before init") {
  auto model = Serial(Dense(2));
  const std::string msg = error_of([&] { (*model)(Tensor::zeros({1, 2})); });
  CHECK(msg.find("layer Serial is not initialised: call init(input_signature) on the model first") != std::string::npos);
}

TEST_CASE("a wrong dtype") {
  auto model = Serial(Dense(2));
  model->init(ShapeDtype{{1, 2}});
  const std::string msg = error_of([&] { (*model)(Tensor::zeros({1, 2}, DType::float64)); });
  CHECK(msg.find("Serial/Dense_2[0]") != std::string::npos);
  CHECK(msg.find("linear expects float x (..., K), w (K, N), b (N) of one dtype, got x f64[1,2], w f32[2,2], b f32[2]") != std::string::npos);
}

TEST_CASE("a deep path carries an index at every level") {
  auto model = Serial(Dense(3), Residual(Dense(3), Fn("Bad", [](const Tensor& x) { return reshape(x, {5}); })));
  const LayerError error = layer_error_of([&] { model->init(ShapeDtype{{1, 3}}); });
  CHECK(error.path() == "Serial/Serial[1]/Branch[0]/Parallel[1]/Serial[1]/Bad[1]");
}

TEST_CASE("too few inputs: a Serial names the child that needs them") {
  auto model = Serial(Dense(2), Dup(), Add(), Add());   // line of creation checked below
  model->init({ShapeDtype{{1, 2}}, ShapeDtype{{1, 2}}});
  const std::string msg = error_of([&] { (*model)(Stack{Tensor::zeros({1, 2})}); });
  CHECK(msg.find("less than n_in (2): its layer [3] Add_in2 (created at tests/core/layer/test_errors.cpp:") !=
        std::string::npos);
  CHECK(msg.find(") takes 2 inputs and finds 1 on the stack") != std::string::npos);
}

TEST_CASE("bad arguments to Select and Dense name where they were created") {
  auto what = [](auto&& f) -> std::string {
    try {
      f();
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return "(no error)";
  };
  const std::string select = what([] { Select({0, -1}); });
  CHECK(select.find("Select (created at tests/core/layer/test_errors.cpp:") == 0);
  CHECK(select.find("): negative index -1") != std::string::npos);
  const std::string dense = what([] { Dense(0); });
  CHECK(dense.find("Dense (created at tests/core/layer/test_errors.cpp:") == 0);
  CHECK(dense.find("): n_units must be >= 1, got 0") != std::string::npos);
}

TEST_CASE("a block built by the library reports the line of the model that asked for it (at_caller)") {
  const auto line = std::source_location::current().line() + 1;
  auto attention = layers::Attention(8, {.n_heads = 2});
  auto causal = layers::CausalAttention(8, {.n_heads = 2});   // the line after
  auto lstm = layers::LSTM(4);                                 // two after
  std::vector<std::pair<const Layer*, std::uint_least32_t>> todo = {
      {attention.get(), line}, {causal.get(), line + 1}, {lstm.get(), line + 2}};
  int checked = 0;
  while (!todo.empty()) {   // every layer of each block, all the way down
    const auto [layer, expected] = todo.back();
    todo.pop_back();
    CHECK_MESSAGE(layer->created_at().line() == expected, layer->display_name());
    CHECK(std::string(layer->created_at().file_name()).find("test_errors.cpp") != std::string::npos);
    ++checked;
    for (const auto& sub : layer->sublayers()) todo.push_back({sub.get(), expected});
  }
  CHECK(checked > 20);
  // The error of a layer deep inside (LSTM's MakeZeroState: rank 3 expected) names the model's line.
  const std::string msg = error_of([&] { lstm->init(ShapeDtype{{2, 4}}); });
  CHECK(msg.find("MakeZeroState: input should be a rank 3 tensor") != std::string::npos);
  CHECK(msg.find(fmt::format("test_errors.cpp:{}", line + 2)) != std::string::npos);
}

TEST_CASE("init refuses weights and buffers larger than the machine's memory before it draws any") {
  // 64 layers of 2^16 × 2^16 weights: each 17 GB could be allocated on its own, and drawn until
  // the kernel killed the process; together they are 1.1 TB, counted by init's sizing pass first.
  LayerList blocks;
  for (int i = 0; i < 64; ++i) blocks.push_back(Dense(1 << 16));
  auto model = Serial(blocks);
  const LayerError error = layer_error_of([&] { model->init(ShapeDtype{{1, 1 << 16}}); });
  CHECK(error.path() == "Serial");
  CHECK(error.method() == "init");
  CHECK(error.message().starts_with("the model's weights and buffers need 1099.5 GB, more than this machine's memory"));
  CHECK(error.message().ends_with("the largest is Serial/Dense_65536[0]/w f32[65536,65536] (17.2 GB)"));
  CHECK_FALSE(model->initialized());   // the sizing pass leaves nothing initialised
  CHECK(model->all_weights().empty());
  // A KV cache is counted with the weights: 2^34 positions of 64 features, keys and values.
  auto attention = DotProductCausalAttention(0.0, std::int64_t{1} << 34, Mode::predict);
  const ShapeDtype qkv{{1, 1, 64}};
  const LayerError cache = layer_error_of([&] { attention->init(Signature{qkv, qkv, qkv}); });
  CHECK(cache.message().find("need 8796.1 GB") != std::string::npos);
  CHECK(cache.message().ends_with("the largest is DotProductCausalAttention/state0 f32[1,17179869184,64] (4398.0 GB)"));
  // What fits is initialised as before.
  auto small = Serial(Dense(3), Dense(2));
  small->init(ShapeDtype{{1, 4}});
  CHECK(small->initialized());
  CHECK(small->all_weights().size() == 4);
}

TEST_CASE("check_call_fits refuses inputs whose call would not fit in the machine's memory") {
  // Dense 4 → 2^20 → 2: 29 MB of weights. 2^10 rows make a 4 GB hidden tensor, which fits; 2^16 rows
  // one of 275 GB, which the call would allocate and the kernel kill it for.
  auto model = Serial(Dense(1 << 20), Dense(2));
  model->init(ShapeDtype{{1, 4}});
  model->check_call_fits({ShapeDtype{{1 << 10, 4}}});
  const LayerError error = layer_error_of([&] { model->check_call_fits({ShapeDtype{{1 << 16, 4}}}); });
  CHECK(error.path() == "Serial");
  CHECK(error.method() == "call");
  CHECK(error.message().starts_with("a call on these inputs needs at least 274.9 GB (0.0 GB of weights, 274.9 GB for "
                                    "its largest tensor, f32[65536,1048576]), more than this machine's memory ("));
  CHECK(model->all_weights().size() == 4);   // nothing changed
}
