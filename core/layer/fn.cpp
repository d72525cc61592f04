#include "core/layer/fn.hpp"

#include <fmt/format.h>

#include "core/layer/internal/fn_lowered.hpp"

namespace ctrax::layers {

namespace {

class FnLayer final : public Layer {
 public:
  FnLayer(std::string name, int n_in, int n_out, std::function<Stack(const Stack&)> f,
          std::source_location created, std::function<bool(decode::TokenProgramBuilder&)> lower = nullptr)
      : Layer(std::move(name), n_in, n_out, created), f_(std::move(f)), lower_(std::move(lower)) {}

  bool lower_token(decode::TokenProgramBuilder& b) override { return lower_ && lower_(b); }

 protected:
  Stack forward(const Stack& inputs) override { return f_(inputs); }

 private:
  std::function<Stack(const Stack&)> f_;
  std::function<bool(decode::TokenProgramBuilder&)> lower_;   // null: an Fn says nothing of its function
};

// A Tensor-returning function may only promise one output.
void check_single(const std::string& name, int n_out) {
  if (n_out != 1)
    throw std::invalid_argument(fmt::format(
        "Fn {}: a function returning one Tensor has n_out 1, not {}; return a Stack instead",
        name, n_out));
}

}  // namespace

LayerPtr FnStack(std::string name, int n_in, int n_out, std::function<Stack(const Stack&)> f,
                 std::source_location created) {
  return std::make_shared<FnLayer>(std::move(name), n_in, n_out, std::move(f), created);
}

LayerPtr FnStackLowered(std::string name, int n_in, int n_out, std::function<Stack(const Stack&)> f,
                        std::function<bool(decode::TokenProgramBuilder&)> lower, std::source_location created) {
  return std::make_shared<FnLayer>(std::move(name), n_in, n_out, std::move(f), created, std::move(lower));
}

LayerPtr Fn(std::string name, std::function<Tensor()> f, int n_out, std::source_location c) {
  check_single(name, n_out);
  return FnStack(std::move(name), 0, 1, [f](const Stack&) { return Stack{f()}; }, c);
}
LayerPtr Fn(std::string name, std::function<Tensor(TensorArg)> f, int n_out, std::source_location c) {
  check_single(name, n_out);
  return FnStack(std::move(name), 1, 1, [f](const Stack& x) { return Stack{f(x[0])}; }, c);
}
LayerPtr Fn(std::string name, std::function<Tensor(TensorArg, TensorArg)> f, int n_out,
            std::source_location c) {
  check_single(name, n_out);
  return FnStack(std::move(name), 2, 1, [f](const Stack& x) { return Stack{f(x[0], x[1])}; }, c);
}
LayerPtr Fn(std::string name, std::function<Tensor(TensorArg, TensorArg, TensorArg)> f, int n_out,
            std::source_location c) {
  check_single(name, n_out);
  return FnStack(std::move(name), 3, 1,
                 [f](const Stack& x) { return Stack{f(x[0], x[1], x[2])}; }, c);
}
LayerPtr Fn(std::string name, std::function<Tensor(TensorArg, TensorArg, TensorArg, TensorArg)> f, int n_out,
            std::source_location c) {
  check_single(name, n_out);
  return FnStack(std::move(name), 4, 1,
                 [f](const Stack& x) { return Stack{f(x[0], x[1], x[2], x[3])}; }, c);
}
LayerPtr Fn(std::string name, std::function<Stack(TensorArg)> f, int n_out, std::source_location c) {
  return FnStack(std::move(name), 1, n_out, [f](const Stack& x) { return f(x[0]); }, c);
}
LayerPtr Fn(std::string name, std::function<Stack(TensorArg, TensorArg)> f, int n_out,
            std::source_location c) {
  return FnStack(std::move(name), 2, n_out, [f](const Stack& x) { return f(x[0], x[1]); }, c);
}
LayerPtr Fn(std::string name, std::function<Stack(TensorArg, TensorArg, TensorArg)> f, int n_out,
            std::source_location c) {
  return FnStack(std::move(name), 3, n_out, [f](const Stack& x) { return f(x[0], x[1], x[2]); },
                 c);
}

}  // namespace ctrax::layers
