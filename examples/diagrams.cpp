// examples/diagrams.cpp — the numbers behind the docs' diagrams, computed by ctrax itself.
//
//   build/examples/diagrams docs-diagrams.json     (scripts/figures.sh runs it; plot_diagrams.py and
//                                                  draw_concepts.py draw)
//
// Writes one JSON file with
//   masks      the PyTorch note's batch (5 source rows of lengths 8, 5, 10, 4, 9 padded to 10;
//              5 target rows padded to 12), and what PaddingMask, causal_mask, their logical_and
//              and EncoderDecoderMask make of it — the chapter on masks prints the same;
//   sinusoid   PositionalEncoding's table for d_model 128 and 100 positions (its initial weights);
//   schedules  the learning rate at every step of the examples' three schedules: lm's cosine,
//              the rsqrt decay Trax defaults to, and the chatbot's Noam;
//   models     TransformerEncoder, TransformerLM and Transformer (one block each, small sizes that
//              draw_concepts.py names: B 3, L 7 (a target 5), d_model 16, d_ff 64, 2 heads,
//              vocabulary 100, 4 classes): the tree and a Trace of one training forward pass — every
//              layer called, with the whole stack it received and left;
//   shift      a 5-token sentence, what ShiftRight makes of it, the targets, causal_mask(5);
//   kv_cache   a predict-mode TransformerLM decoding 5 tokens: after each, the keys its first
//              head's cache holds (rows not yet filled are 0) and the fill counter;
//   beam       one beam-search step of a tiny character LM trained here for a few seconds on one
//              line: the two beams, each one's most likely next characters with their
//              log-probabilities, and the scores beam search ranks.
// No number in a figure is typed by hand: each is what the layer or schedule returns.
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <iostream>

#include "core/io/atomic_file.hpp"
#include "examples/diagrams.hpp"
#include "core/tensor/ops.hpp"
#include "core/train/schedules.hpp"
#include "layers/layers.hpp"

using namespace ctrax;
namespace tl = ctrax::layers;

namespace ctrax::examples::diagrams {

namespace {

// The batches of the PyTorch multi-head attention note, padded with 0 on the right.
Tensor padded(const std::vector<std::vector<int>>& rows, std::int64_t L) {
  std::vector<double> values;
  for (const auto& r : rows) {
    for (int v : r) values.push_back(v);
    values.resize(values.size() + static_cast<std::size_t>(L) - r.size(), 0.0);
  }
  return Tensor::from_doubles(values, {static_cast<std::int64_t>(rows.size()), L}, DType::int32);
}


nlohmann::json masks() {
  const Tensor source = padded({{62, 13, 47, 39, 78, 33, 56, 13}, {60, 96, 51, 32, 90},
                                {35, 45, 48, 65, 91, 99, 92, 10, 3, 21}, {66, 88, 98, 47},
                                {77, 65, 51, 77, 19, 15, 35, 19, 23}}, 10);
  const Tensor target = padded({{33, 11, 49, 10}, {88, 34, 5, 29, 99, 45, 11, 25},
                                {67, 25, 15, 90, 54, 4, 92, 10, 46, 20, 88, 19}, {16, 58, 91, 47, 12, 5, 8},
                                {71, 63, 62, 7, 9, 11, 55, 91, 32, 48}}, 12);
  auto padding_layer = tl::PaddingMask();
  padding_layer->init(signature_of(Stack{source}));
  const Tensor padding = (*padding_layer)(source);                                   // (5, 1, 1, 10)
  const Tensor causal = tl::causal_mask(10);                                           // (1, 10, 10)
  const Tensor combined = logical_and(reshape(padding, {5, 1, 10}), causal);           // (5, 10, 10)
  auto cross_layer = tl::EncoderDecoderMask();
  const Tensor decoder_x = Tensor::zeros({5, 12, 8});
  cross_layer->init(signature_of(Stack{decoder_x, padding}));
  const Tensor cross = (*cross_layer)(Stack{decoder_x, padding})[0];                   // (5, 1, 12, 10)
  return {{"source", nested(source)}, {"target", nested(target)},
          {"padding", nested(reshape(padding, {5, 10}))}, {"causal", nested(reshape(causal, {10, 10}))},
          {"combined", nested(combined)}, {"cross", nested(reshape(cross, {5, 12, 10}))}};
}

nlohmann::json sinusoid() {
  auto pe = tl::PositionalEncoding(100);
  pe->init(ShapeDtype{{1, 100, 128}}, Rng(0));
  return {{"d_model", 128}, {"table", nested(reshape(pe->all_weights().at(0), {100, 128}))}};
}

nlohmann::json schedule(const std::string& name, const std::string& used_by, const train::Schedule& s,
                        std::int64_t n_steps) {
  std::vector<double> lr;
  for (std::int64_t step = 1; step <= n_steps; ++step) lr.push_back(s(step));
  return {{"name", name}, {"used_by", used_by}, {"lr", lr}};
}


}  // namespace

nlohmann::json nested(const Tensor& t) {   // a tensor as nested JSON lists of numbers
  const auto v = t.to_doubles();
  std::function<nlohmann::json(int, std::size_t&)> go = [&](int axis, std::size_t& i) {
    nlohmann::json j = nlohmann::json::array();
    for (std::int64_t k = 0; k < t.dim(axis); ++k)
      if (axis + 1 == t.rank()) j.push_back(v[i++]); else j.push_back(go(axis + 1, i));
    return j;
  };
  std::size_t i = 0;
  return go(0, i);
}

}  // namespace ctrax::examples::diagrams

using namespace ctrax::examples::diagrams;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: diagrams OUT.json   (the numbers behind the docs' diagrams)\n";
    return 2;
  }
  try {
    const nlohmann::json j = {
        {"masks", masks()},
        {"sinusoid", sinusoid()},
        {"schedules",
         {schedule("cosine: warmup_and_cosine_decay(100, 2500, 2e-3)", "lm (Tiny Shakespeare)",
                   train::warmup_and_cosine_decay(100, 2500, 2e-3), 2500),
          schedule("rsqrt: warmup_and_rsqrt_decay(100, 2e-3)", "lm --schedule rsqrt; Trax's default shape",
                   train::warmup_and_rsqrt_decay(100, 2e-3), 2500),
          schedule("noam(d_model 256, warm-up 4000)", "chatbot (the paper's schedule)", train::noam(256, 4000), 6000)}},
        {"models", models_traced()},
        {"shift", shift()},
        {"kv_cache", kv_cache()},
        {"beam", beam()}};
    io::write_atomically(argv[1], j.dump() + "\n");
    fmt::print("diagram data written to {}\n", argv[1]);
  } catch (const std::exception& e) {
    std::cerr << "diagrams: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
