// tests/random_tree.hpp — random trees of Trax's combinators, for property tests: users' own
// models, as far as the engine can tell.
//
// The execution plan (core/layer/plan.hpp) and decoding's token program
// (core/decode/internal/token_program.hpp) are both derived from the layer tree by rule, for every
// model — so a test over the registry's models alone leaves untried the places a user's tree puts
// the rules' runs: in a Branch beside a None, after a Select of its own picks, under a Residual,
// with stack items riding below. RandomTree builds such trees from a seed, the same tree for the
// same seed and options (build one twice for two copies with the same weights, or once per mode).
//
// Every activation has one shape (B, L, width), so any layer may follow any other. The leaves are
// the layers the rules take and the decoding program lowers (Dense, Relu, Dropout, LayerNorm,
// BatchNorm, CausalAttention, PositionalEncoding), layers that neither does (Tanh, Multiply), and
// the stack's plumbing (Dup, Swap, Drop, Add, Select); a run a rule takes (Dense, Relu, Dropout;
// Dense, Relu, Dropout, Dense; BatchNorm, Relu; Relu, Dropout; a Select feeding a Parallel) is put
// in a Serial often enough that most trees have fused steps, and a leaf taking one input and giving
// one is now and then used again at another place (Trax's weight sharing, by layer identity).
// Everything position-wise or causal, so a tree decodes.
#pragma once

#include <random>
#include <vector>

#include "core/layer/combinators.hpp"
#include "layers/activations.hpp"
#include "layers/batch_norm.hpp"
#include "layers/causal_attention.hpp"
#include "layers/dense.hpp"
#include "layers/dropout.hpp"
#include "layers/layer_norm.hpp"
#include "layers/positional_encoding.hpp"

namespace ctrax::testing {

struct RandomTreeOptions {
  std::int64_t width = 4;   // the activations' last axis: Dense's units, CausalAttention's d_feature
  int n_heads = 2;          // CausalAttention's (divides width)
  // The mode of the layers that have one. In train, each Dropout is built in train or eval at random
  // (a model built for eval sets the mode of those layers alone); otherwise every layer in this one.
  Mode mode = Mode::train;
};

class RandomTree {
 public:
  RandomTree(unsigned seed, RandomTreeOptions options) : gen_(seed), o_(options) {}

  // A tree `depth` combinators deep; its n_in and n_out are what they come to (a test keeps the
  // ones it can feed).
  LayerPtr layer(int depth) {
    if (depth == 0) return coin() ? leaf() : layers::make_serial({run_a_rule_takes()});
    switch (pick(4)) {
      case 0: {
        layers::LayerArgs items = children(depth);
        const layers::LayerList rule = run_a_rule_takes();
        items.insert(items.begin() + pick(static_cast<int>(items.size()) + 1), rule.begin(), rule.end());
        return layers::make_serial(items);
      }
      case 1: return layers::make_branch(with_none(children(depth)));
      case 2: return layers::make_parallel(with_none(children(depth, 2)));
      default: return layers::make_residual(children(depth));
    }
  }

 private:
  int pick(int n) { return std::uniform_int_distribution<int>(0, n - 1)(gen_); }
  bool coin() { return pick(2) == 0; }

  layers::LayerArgs children(int depth, int at_least = 1) {
    layers::LayerArgs items;
    for (int i = 0, n = at_least + pick(3); i < n; ++i) items.emplace_back(coin() ? layer(depth - 1) : leaf());
    return items;
  }
  // A Branch's or Parallel's items, one of them sometimes None (nullptr: Trax's identity branch).
  layers::LayerArgs with_none(layers::LayerArgs items) {
    if (coin()) items[static_cast<std::size_t>(pick(static_cast<int>(items.size())))] = nullptr;
    return items;
  }
  LayerPtr dropout() {
    const double rate = coin() ? 0.5 : 0.25;
    const std::vector<int> shared_axes = coin() ? std::vector<int>{} : std::vector<int>{1};
    const bool eval = pick(3) == 0;   // drawn in every mode, so a seed builds the same tree in each
    return layers::Dropout({.rate = rate, .shared_axes = shared_axes,
                            .mode = o_.mode != Mode::train ? o_.mode : eval ? Mode::eval : Mode::train});
  }
  LayerPtr select(int n_out = 0) {
    const int n_in = 1 + pick(3);
    std::vector<int> indices(static_cast<std::size_t>(n_out > 0 ? n_out : 1 + pick(3)));
    for (int& i : indices) i = pick(n_in);
    return layers::Select(indices, n_in);
  }
  LayerPtr dense() { return layers::Dense(o_.width, {.use_bias = pick(4) != 0}); }
  LayerPtr batch_norm() { return layers::BatchNorm({.axis = {0, 1}, .mode = o_.mode}); }
  layers::LayerList run_a_rule_takes() {
    switch (pick(5)) {
      case 0: return {dense(), layers::Relu(), dropout()};
      case 1: return {layers::Dense(o_.width), layers::Relu(), dropout(), dense()};
      case 2: return {batch_norm(), layers::Relu()};
      case 3: return {layers::Relu(), dropout()};
      default: {   // a Select that feeds the Parallel exactly (Branch's own structure, with any picks)
        LayerPtr parallel = layers::make_parallel(with_none(children(1, 2)));
        return {select(parallel->n_in()), parallel};
      }
    }
  }
  LayerPtr leaf() {
    // One layer in two places: Trax's weight sharing, by layer identity.
    if (!made_.empty() && pick(8) == 0) return made_[static_cast<std::size_t>(pick(static_cast<int>(made_.size())))];
    LayerPtr made = new_leaf();
    if (made->n_in() == 1 && made->n_out() == 1) made_.push_back(made);
    return made;
  }
  LayerPtr new_leaf() {
    switch (pick(14)) {
      case 0: return dense();
      case 1: return layers::Relu();
      case 2: return dropout();
      case 3: return layers::LayerNorm();
      case 4: return batch_norm();
      case 5: return layers::Tanh();
      case 6: return layers::Dup();
      case 7: return layers::Swap();
      case 8: return layers::Drop();
      case 9: return layers::Add();
      case 10: return layers::Multiply();
      case 11: return select();
      case 12: return layers::PositionalEncoding(16, {.dropout = coin() ? 0.0 : 0.25, .mode = o_.mode});
      default: {
        const double rate = coin() ? 0.0 : 0.25;
        return layers::CausalAttention(o_.width, {.n_heads = o_.n_heads, .dropout = rate, .mode = o_.mode});
      }
    }
  }

  std::mt19937 gen_;
  RandomTreeOptions o_;
  std::vector<LayerPtr> made_;   // the leaves so far that take one input and give one: shared later
};

}  // namespace ctrax::testing
