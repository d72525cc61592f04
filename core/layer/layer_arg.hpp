// ctrax/core/layer/layer_arg.hpp — what a combinator accepts as a "layer" argument.
//
// Trax combinators take layers, (nested) lists of layers, and None:
//   Serial(a, [b, c], d)      lists are flattened in place: Serial(a, b, c, d)
//   Branch(None, f)           None is the identity branch (a 1-in/1-out no-op)
// LayerArg is that union: a LayerPtr, a LayerList (std::vector<LayerPtr>), or nullptr for None.
// Model code builds blocks as LayerLists, exactly as trax/models/transformer.py builds Python
// lists, and hands them to Serial.
//
// Variadic combinators record the caller's file:line through a class template with a deduction
// guide (the standard way to combine a parameter pack with std::source_location). The object is
// a LayerPtr — Serial(a, b) *is* a std::shared_ptr<Layer> — so no template type ever escapes
// into model code. Library code that builds a block for its own caller passes that caller's
// site as the LAST argument, so errors point at the model, not at the library:
//   Serial(Select({0, 0, 0}), AttentionQKV(...), created)
#pragma once

#include <cstddef>
#include <memory>
#include <source_location>
#include <type_traits>
#include <utility>
#include <vector>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

using LayerList = std::vector<LayerPtr>;

class LayerArg {
 public:
  LayerArg(LayerPtr layer) : layers_{std::move(layer)} {}            // NOLINT: implicit on purpose
  LayerArg(LayerList layers) : layers_(std::move(layers)), is_list_(true) {}  // NOLINT
  LayerArg(std::nullptr_t) : layers_{nullptr} {}                      // NOLINT
  const LayerList& layers() const { return layers_; }
  bool is_none() const { return !is_list_ && layers_.size() == 1 && !layers_[0]; }
  bool is_list() const { return is_list_; }

 private:
  LayerList layers_;
  bool is_list_ = false;
};

using LayerArgs = std::vector<LayerArg>;

// A variadic combinator's arguments: the layer arguments, and the creation site — `here` (the
// caller's line) unless the last argument is a std::source_location.
struct CombinatorArgs {
  LayerArgs layers;
  std::source_location created;
};

template <class... Args>
CombinatorArgs combinator_args(std::source_location here, Args&&... args) {
  CombinatorArgs out{{}, here};
  out.layers.reserve(sizeof...(Args));
  const auto take = [&out]<class A>(A&& a) {
    if constexpr (std::is_same_v<std::decay_t<A>, std::source_location>)
      out.created = a;
    else
      out.layers.emplace_back(std::forward<A>(a));
  };
  (take(std::forward<Args>(args)), ...);
  (void)take;   // unused when there are no arguments (Serial())
  return out;
}

// All layers of `args`, lists flattened. A None among them is an error (as in Trax), except
// that Serial(None) alone means "no sublayers".
LayerList flatten(const LayerArgs& args, const char* combinator);

}  // namespace ctrax::layers
