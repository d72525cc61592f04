// ctrax/core/layer/layer_arg.hpp — what a combinator accepts as a "layer" argument.
//
// Trax combinators take layers, (nested) lists of layers, and None:
//   Serial(a, [b, [c]], d)    lists are flattened in place: Serial(a, b, c, d)
//   Branch(None, f)           None is the identity branch (a 1-in/1-out no-op)
//   Branch([], f)             so is the empty list
// In C++ a list is written in braces, nested as deep as you like, and None is nullptr:
//   Serial(a, {b, {c}}, d)    Branch(nullptr, f)    Branch({}, f)
// LayerArg is that union: a layer, a list (a LayerList, or braces), or nullptr for None. Model
// code builds blocks as LayerLists, exactly as trax/models/transformer.py builds Python lists,
// and hands them to Serial.
//
// The variadic combinators (Serial, Branch, Parallel, Residual) are overloads for 0 to 16
// LayerArgs — overloads, not templates, so that a braced list converts to a LayerArg — each
// recording the caller's file:line by a defaulted last parameter (std::source_location). Library
// code that builds a block for its own caller passes that caller's site as the LAST argument, so
// errors point at the model, not at the library:
//   Serial(Select({0, 0, 0}), AttentionQKV(...), created)
// An argument that is none of these (a number, a string) gets one readable error
// (CTRAX_VARIADIC_COMBINATOR below), not a list of every overload.
#pragma once

#include <cstddef>
#include <initializer_list>
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
  // Any shared_ptr to a Layer subclass (one conversion, as LayerPtr itself takes).
  template <class L>
    requires(std::is_convertible_v<L, LayerPtr> && !std::is_same_v<std::decay_t<L>, LayerPtr> &&
             !std::is_same_v<std::decay_t<L>, std::nullptr_t>)
  LayerArg(L&& layer) : layers_{LayerPtr(std::forward<L>(layer))} {}   // NOLINT
  LayerArg(LayerList layers) : layers_(std::move(layers)), is_list_(true) {}  // NOLINT
  // Braces: {b, c}, {b, {c, d}}, {} — a list, nested lists flattened in place.
  LayerArg(std::initializer_list<LayerArg> items) : is_list_(true) {   // NOLINT
    for (const LayerArg& item : items) layers_.insert(layers_.end(), item.layers_.begin(), item.layers_.end());
  }
  LayerArg(std::nullptr_t) : layers_{nullptr} {}                      // NOLINT
  const LayerList& layers() const { return layers_; }
  bool is_none() const { return !is_list_ && layers_.size() == 1 && !layers_[0]; }
  bool is_list() const { return is_list_; }

 private:
  LayerList layers_;
  bool is_list_ = false;
};

using LayerArgs = std::vector<LayerArg>;

namespace detail {
// The creation site as a variadic combinator's last parameter: made from a std::source_location
// only — never from {} — so that Parallel(f, {}) reads {} as the empty list.
struct CallSite {
  template <class S>
    requires std::is_same_v<S, std::source_location>
  CallSite(S where) : where(where) {}   // NOLINT: implicit on purpose
  std::source_location where;
};
template <class A>
inline constexpr bool layer_arg_or_site =
    std::is_convertible_v<A, LayerArg> || std::is_same_v<std::decay_t<A>, std::source_location>;
template <class... A>
inline constexpr bool always_false = false;
}  // namespace detail

// CTRAX_VARIADIC_COMBINATOR(name, make) declares name(a1, …, an[, created]) for n = 0…16
// LayerArgs, each returning make(LayerArgs{a1, …, an}, site), and one template that catches every
// other argument list with a readable error.
#define CTRAX_LAYER_PARAMS_1 LayerArg a1
#define CTRAX_LAYER_PARAMS_2 CTRAX_LAYER_PARAMS_1, LayerArg a2
#define CTRAX_LAYER_PARAMS_3 CTRAX_LAYER_PARAMS_2, LayerArg a3
#define CTRAX_LAYER_PARAMS_4 CTRAX_LAYER_PARAMS_3, LayerArg a4
#define CTRAX_LAYER_PARAMS_5 CTRAX_LAYER_PARAMS_4, LayerArg a5
#define CTRAX_LAYER_PARAMS_6 CTRAX_LAYER_PARAMS_5, LayerArg a6
#define CTRAX_LAYER_PARAMS_7 CTRAX_LAYER_PARAMS_6, LayerArg a7
#define CTRAX_LAYER_PARAMS_8 CTRAX_LAYER_PARAMS_7, LayerArg a8
#define CTRAX_LAYER_PARAMS_9 CTRAX_LAYER_PARAMS_8, LayerArg a9
#define CTRAX_LAYER_PARAMS_10 CTRAX_LAYER_PARAMS_9, LayerArg a10
#define CTRAX_LAYER_PARAMS_11 CTRAX_LAYER_PARAMS_10, LayerArg a11
#define CTRAX_LAYER_PARAMS_12 CTRAX_LAYER_PARAMS_11, LayerArg a12
#define CTRAX_LAYER_PARAMS_13 CTRAX_LAYER_PARAMS_12, LayerArg a13
#define CTRAX_LAYER_PARAMS_14 CTRAX_LAYER_PARAMS_13, LayerArg a14
#define CTRAX_LAYER_PARAMS_15 CTRAX_LAYER_PARAMS_14, LayerArg a15
#define CTRAX_LAYER_PARAMS_16 CTRAX_LAYER_PARAMS_15, LayerArg a16
#define CTRAX_LAYER_NAMES_1 a1
#define CTRAX_LAYER_NAMES_2 CTRAX_LAYER_NAMES_1, a2
#define CTRAX_LAYER_NAMES_3 CTRAX_LAYER_NAMES_2, a3
#define CTRAX_LAYER_NAMES_4 CTRAX_LAYER_NAMES_3, a4
#define CTRAX_LAYER_NAMES_5 CTRAX_LAYER_NAMES_4, a5
#define CTRAX_LAYER_NAMES_6 CTRAX_LAYER_NAMES_5, a6
#define CTRAX_LAYER_NAMES_7 CTRAX_LAYER_NAMES_6, a7
#define CTRAX_LAYER_NAMES_8 CTRAX_LAYER_NAMES_7, a8
#define CTRAX_LAYER_NAMES_9 CTRAX_LAYER_NAMES_8, a9
#define CTRAX_LAYER_NAMES_10 CTRAX_LAYER_NAMES_9, a10
#define CTRAX_LAYER_NAMES_11 CTRAX_LAYER_NAMES_10, a11
#define CTRAX_LAYER_NAMES_12 CTRAX_LAYER_NAMES_11, a12
#define CTRAX_LAYER_NAMES_13 CTRAX_LAYER_NAMES_12, a13
#define CTRAX_LAYER_NAMES_14 CTRAX_LAYER_NAMES_13, a14
#define CTRAX_LAYER_NAMES_15 CTRAX_LAYER_NAMES_14, a15
#define CTRAX_LAYER_NAMES_16 CTRAX_LAYER_NAMES_15, a16
#define CTRAX_COMBINATOR_OVERLOAD(name, make, n)                                                    \
  inline LayerPtr name(CTRAX_LAYER_PARAMS_##n,                                                      \
                       detail::CallSite here = std::source_location::current()) {                   \
    return make(LayerArgs{CTRAX_LAYER_NAMES_##n}, here.where);                                     \
  }
#define CTRAX_VARIADIC_COMBINATOR(name, make)                                                       \
  inline LayerPtr name(detail::CallSite here = std::source_location::current()) {                 \
    return make(LayerArgs{}, here.where);                                                           \
  }                                                                                                 \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 1) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 2) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 3) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 4) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 5) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 6) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 7) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 8) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 9) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 10) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 11) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 12) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 13) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 14) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 15) \
  CTRAX_COMBINATOR_OVERLOAD(name, make, 16) \
  template <class... Args>                                                                          \
    requires(!(detail::layer_arg_or_site<Args> && ...) || sizeof...(Args) > 17)                     \
  LayerPtr name(Args&&...) {                                                                        \
    static_assert(detail::always_false<Args...>,                                                    \
                  #name "'s arguments are layers, braced lists of layers {a, b} (nested as Trax's " \
                  "lists), nullptr for None, and last the creation site; at most 16 of them "       \
                  "(put more in a LayerList)");                                                     \
    return nullptr;                                                                                 \
  }

// All layers of `args`, lists flattened. A None among them is an error (as in Trax), except
// that Serial(None) alone means "no sublayers".
LayerList flatten(const LayerArgs& args, const char* combinator);

}  // namespace ctrax::layers
