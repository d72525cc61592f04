#include "core/layer/select.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "core/decode/internal/token_program.hpp"
#include "core/layer/internal/plumbing_kinds.hpp"

namespace ctrax::layers {

namespace {

class SelectLayer final : public Layer {
 public:
  SelectLayer(std::vector<int> indices, int n_in, std::source_location created)
      : Layer(fmt::format("Select[{}]", fmt::join(indices, ",")), n_in,
              static_cast<int>(indices.size()), created),
        indices_(std::move(indices)) {}

  const std::vector<int>& indices() const { return indices_; }

 protected:
  Stack forward(const Stack& inputs) override {
    Stack out;
    out.reserve(indices_.size());
    for (int i : indices_) out.push_back(inputs[i]);
    return out;
  }

  bool lower_token(decode::TokenProgramBuilder& b) override { return b.select(n_in(), indices_); }

 private:
  std::vector<int> indices_;
};

}  // namespace

const std::vector<int>* select_indices(const Layer& layer) {
  const auto* select = dynamic_cast<const SelectLayer*>(&layer);
  return select ? &select->indices() : nullptr;
}

LayerPtr Select(std::vector<int> indices, int n_in, std::source_location created) {
  int deepest = -1;
  for (int i : indices) {
    if (i < 0)
      throw std::invalid_argument(fmt::format("Select (created at {}): negative index {}; indices count from the "
                                              "top of the stack, 0 first", location_string(created), i));
    deepest = std::max(deepest, i);
  }
  if (n_in < 0) n_in = deepest + 1;
  if (deepest >= n_in)
    throw std::invalid_argument(fmt::format("Select (created at {}): index {} is not among the top n_in = {} items",
                                            location_string(created), deepest, n_in));
  return std::make_shared<SelectLayer>(std::move(indices), n_in, created);
}

}  // namespace ctrax::layers
