#include "layers/rnn.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/layer/combinators.hpp"
#include "core/tensor/ops.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

namespace {

// Trax's RandomUniformInitializer(lim): U(−lim, lim).
Initializer random_uniform(double limit) {
  return [limit](const Shape& shape, const Rng& rng, DType dtype) { return rng.uniform(shape, -limit, limit, dtype); };
}

// `init` plus a constant (Trax adds forget_bias to the drawn bias).
Initializer plus(Initializer init, double c) {
  return [init = std::move(init), c](const Shape& shape, const Rng& rng, DType dtype) {
    Tensor t = init(shape, rng, dtype);
    return c == 0 ? t : t + c;
  };
}

// `init` plus a constant on the forget gate's quarter of an LSTM bias (i, j, f, o: [2n, 3n)).
Initializer plus_on_forget_gate(Initializer init, std::int64_t n, double c) {
  return [init = std::move(init), n, c](const Shape& shape, const Rng& rng, DType dtype) {
    std::vector<double> offset(static_cast<std::size_t>(4 * n), 0.0);
    std::fill(offset.begin() + 2 * n, offset.begin() + 3 * n, c);
    return init(shape, rng, dtype) + Tensor::from_doubles(offset, shape, dtype);
  };
}

// The scanned axis of a (B, L, d) input when a cell can run all of it at once: 1, else -1.
int sequence_axis(const Stack& inputs, int axis) {
  const Tensor& x = inputs[0];
  if (x.rank() != 3 || inputs[1].rank() != 2) return -1;
  const int a = axis < 0 ? axis + x.rank() : axis;
  return a == 1 && x.dim(1) > 0 ? 1 : -1;
}

// The last position of a (B, L, w) sequence: (B, w).
Tensor last_position(const Tensor& s) { return squeeze(slice(s, 1, s.dim(1) - 1, s.dim(1)), 1); }

// The two checks every cell makes. A state of the wrong width almost always comes from Trax's
// composition (MakeZeroState sizes the state from the input's depth), so the message says so.
// `multiplier` is 2 for LSTM's [c, h], 1 for GRU's s.
void check_state_width(const char* cell, const char* layer, const Shape& state, std::int64_t n, int multiplier) {
  if (state.empty() || state.back() != multiplier * n)
    throw std::invalid_argument(fmt::format(
        "{}: the state must have width {}·n_units = {}, got {} ({}_{} makes its zero state from the input's depth, "
        "as Trax does: give it inputs of depth {})",
        cell, multiplier, multiplier * n, ctrax::to_string(state), layer, n, n));
}
void check_input_depth(const char* cell, std::int64_t d, std::int64_t n, const Tensor& w) {
  if (d + n != w.dim(0))
    throw std::invalid_argument(fmt::format("{} was initialised for inputs of depth {}, got {}", cell, w.dim(0) - n, d));
}

class LSTMCellLayer final : public Layer {
 public:
  LSTMCellLayer(std::int64_t n_units, double forget_bias, std::source_location created)
      : Layer("LSTMCell", 2, 2, created), n_(n_units), forget_bias_(forget_bias) {}

  std::optional<Stack> scan_all(const Stack& inputs, int axis) override {
    if (sequence_axis(inputs, axis) != 1) return std::nullopt;
    const Tensor &x = inputs[0], &w = weights()[0], &b = weights()[1];
    const std::int64_t d = x.dim(2);
    check(x.dim(2), inputs[1]);
    const Tensor S = lstm_recurrence(linear(x, slice(w, 0, 0, d), b), inputs[1], slice(w, 0, d, d + n_));
    return Stack{slice(S, 2, n_, 2 * n_), last_position(S)};
  }

 protected:
  void init_weights_and_state(const Signature& input) override {
    const auto& x = input.at(0).shape;
    if (x.empty()) throw std::invalid_argument("LSTMCell needs inputs x (..., d), got a scalar");
    check_state(input.at(1).shape);
    const DType dt = weight_dtype(input.at(0).dtype);
    const auto keys = rng().split(2);
    add_weight("w", {x.back() + n_, 4 * n_}, dt, glorot_uniform(), keys[0]);
    add_weight("b", {4 * n_}, dt, plus_on_forget_gate(random_normal(1e-6), n_, forget_bias_), keys[1]);
  }

  Stack forward(const Stack& inputs) override {
    const Tensor &x = inputs[0], &state = inputs[1];
    check(x.dim(-1), state);
    const Tensor c = slice(state, -1, 0, n_), h = slice(state, -1, n_, 2 * n_);
    const Tensor y = linear(concatenate({x, h}, -1), weights()[0], weights()[1]);
    const Tensor i = slice(y, -1, 0, n_), j = slice(y, -1, n_, 2 * n_), f = slice(y, -1, 2 * n_, 3 * n_),
                 o = slice(y, -1, 3 * n_, 4 * n_);
    const Tensor new_c = c * sigmoid(f) + sigmoid(i) * tanh(j);
    const Tensor new_h = tanh(new_c) * sigmoid(o);
    return {new_h, concatenate({new_c, new_h}, -1)};
  }

 private:
  void check_state(const Shape& state) const { check_state_width("LSTMCell", "LSTM", state, n_, 2); }
  void check(std::int64_t d, const Tensor& state) const {
    check_state(state.shape());
    check_input_depth("LSTMCell", d, n_, weights()[0]);
  }

  std::int64_t n_;
  double forget_bias_;
};

class GRUCellLayer final : public Layer {
 public:
  GRUCellLayer(std::int64_t n_units, double forget_bias, std::source_location created)
      : Layer("GRUCell", 2, 2, created), n_(n_units), forget_bias_(forget_bias) {}

  std::optional<Stack> scan_all(const Stack& inputs, int axis) override {
    if (sequence_axis(inputs, axis) != 1) return std::nullopt;
    const Tensor& x = inputs[0];
    const auto& w = weights();
    const std::int64_t d = x.dim(2);
    check(d, inputs[1]);
    const Tensor S = gru_recurrence(linear(x, slice(w[0], 0, 0, d), w[1]), linear(x, slice(w[2], 0, 0, d), w[3]),
                                    inputs[1], slice(w[0], 0, d, d + n_), slice(w[2], 0, d, d + n_));
    return Stack{S, last_position(S)};
  }

 protected:
  void init_weights_and_state(const Signature& input) override {
    const auto& x = input.at(0).shape;
    if (x.empty()) throw std::invalid_argument("GRUCell needs inputs x (..., d), got a scalar");
    check_state(input.at(1).shape);
    const DType dt = weight_dtype(input.at(0).dtype);
    const auto keys = rng().split(4);
    add_weight("w1", {x.back() + n_, 2 * n_}, dt, random_uniform(0.01), keys[0]);
    add_weight("b1", {2 * n_}, dt, plus(random_normal(1e-6), forget_bias_), keys[1]);
    add_weight("w2", {x.back() + n_, n_}, dt, random_uniform(0.01), keys[2]);
    add_weight("b2", {n_}, dt, random_normal(1e-6), keys[3]);
  }

  Stack forward(const Stack& inputs) override {
    const Tensor &x = inputs[0], &s = inputs[1];
    check(x.dim(-1), s);
    const auto& w = weights();
    const Tensor ur = sigmoid(linear(concatenate({x, s}, -1), w[0], w[1]));
    const Tensor u = slice(ur, -1, 0, n_), r = slice(ur, -1, n_, 2 * n_);
    const Tensor c = tanh(linear(concatenate({x, r * s}, -1), w[2], w[3]));
    const Tensor new_s = u * s + (1.0 - u) * c;
    return {new_s, new_s};
  }

 private:
  void check_state(const Shape& state) const { check_state_width("GRUCell", "GRU", state, n_, 1); }
  void check(std::int64_t d, const Tensor& state) const {
    check_state(state.shape());
    check_input_depth("GRUCell", d, n_, weights()[0]);
  }

  std::int64_t n_;
  double forget_bias_;
};

void check_units(const char* what, std::int64_t n_units, const std::source_location& created) {
  if (n_units < 1)
    throw std::invalid_argument(fmt::format("{} (created at {}): n_units must be >= 1, got {}", what,
                                            location_string(created), n_units));
}

}  // namespace

LayerPtr LSTMCell(std::int64_t n_units, double forget_bias, std::source_location created) {
  check_units("LSTMCell", n_units, created);
  return std::make_shared<LSTMCellLayer>(n_units, forget_bias, created);
}

LayerPtr GRUCell(std::int64_t n_units, double forget_bias, std::source_location created) {
  check_units("GRUCell", n_units, created);
  return std::make_shared<GRUCellLayer>(n_units, forget_bias, created);
}

LayerPtr MakeZeroState(int depth_multiplier, std::source_location created) {
  return Fn(
      "MakeZeroState",
      [depth_multiplier](const Tensor& x) {
        if (x.rank() != 3)
          throw std::invalid_argument(fmt::format(
              "MakeZeroState: input should be a rank 3 tensor (batch_size, sequence_length, feature_depth), got {}",
              x.signature()));
        return Tensor::zeros({x.dim(0), depth_multiplier * x.dim(2)}, weight_dtype(x.dtype()));
      },
      1, created);
}

// (The cells get `created` themselves: their size is checked as they are made, naming the site.)
LayerPtr LSTM(std::int64_t n_units, LSTMOptions options, std::source_location created) {
  LayerList body;
  if (!options.initial_state) body.push_back(Branch(nullptr, MakeZeroState(2)));
  body.push_back(Scan(LSTMCell(n_units, 1.0, created), 1, 1, options.mode));
  if (!options.return_state) body.push_back(Select({0}, 2));  // drops the state
  return at_caller(make_serial({body}, fmt::format("LSTM_{}", n_units), created, LayerList{}), created);
}

LayerPtr GRU(std::int64_t n_units, Mode mode, std::source_location created) {
  return at_caller(make_serial({LayerList{Branch(nullptr, MakeZeroState(1)), Scan(GRUCell(n_units, 0.0, created), 1, 1, mode),
                                          Select({0}, 2)}},
                               fmt::format("GRU_{}", n_units), created, LayerList{}),
                   created);
}

}  // namespace ctrax::layers
