// ctrax/core/train/checkpoint.hpp — saving and restoring training, by name.
//
// A checkpoint is one safetensors file (safetensors.hpp) holding
//     <path of each weight in the layer tree>     "Serial/Dense_16[0]/w"
//     state/<path>/state<k>                       layer state (position counters, ...), if any
//     opt/<weight path>/<slot>                    the first optimizer's slots ("opt/…/m", "…/v");
//     opt<i>/<weight path>/<slot>                 task i's optimizer when there are several
//     opt/<weight path>/ema                       the weights' average, when the optimizer keeps
//                                                 one (Optimizer::average_weights)
// and in its metadata
//     format = "ctrax-checkpoint", format_version = "1", step, seed (the Loop's random seed:
//     every step's randomness is derived from it and the step), config (the program's
//     hyper-parameters as JSON text), model (the printed layer tree, to read what was trained).
//
// Tensors are matched to the model by name, never by position, so loading into a model whose
// tree differs reports exactly what differs: the missing, unexpected and mis-shaped tensors by
// name, with the file's name. Nothing in the model changes unless everything matches. Trax matched
// arrays by order and shape, and failed with IndexError (google/trax#1621).
//
// From Python (pip install safetensors, or by hand: 8-byte header length, JSON header, bytes):
//     from safetensors.numpy import load_file
//     weights = load_file("out/model.safetensors")   # {"Serial/Dense_16[0]/w": array, ...}
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/layer/layer.hpp"
#include "core/train/optimizer.hpp"
#include "core/train/safetensors.hpp"

namespace ctrax::train {

inline constexpr int checkpoint_format_version = 1;

struct CheckpointInfo {
  std::int64_t step = 0;      // training steps done
  std::uint64_t seed = 0;     // the Loop's random seed
  std::string config = "";    // free-form, usually the hyper-parameters as JSON
  std::string model = "";     // the printed tree (informative; not checked)
  bool averaged_weights = false;  // load_weights: the file's weight averages were loaded
};

// Writes model weights and state, optimizer slots and `info` to `path` (atomically).
void save_checkpoint(const std::string& path, const Layer& model,
                     const std::vector<OptimizerPtr>& optimizers, const CheckpointInfo& info);

// Restores weights, state and the optimizers' slots into an initialised model. Throws
// std::runtime_error naming the file and every missing / unexpected / mis-shaped tensor; the
// model and optimizers are unchanged then.
CheckpointInfo load_checkpoint(const std::string& path, Layer& model,
                               const std::vector<OptimizerPtr>& optimizers);

// Restores the weights and the state training kept (no slots): for an eval- or predict-mode model
// built to use a trained one. Predict-mode models name their weights as train-mode ones (Cache is
// transparent). The state a trained model keeps is what it learned about its data — BatchNorm's
// running statistics — and each of the file's state tensors must find the model's of that name and
// shape; the model's other state (a predict-mode model's caches and counters) is left as it is.
// When the file holds an average for every weight (opt/<path>/ema), those are loaded instead —
// they are what training evaluated and chose best.safetensors by — and info.averaged_weights says so.
CheckpointInfo load_weights(const std::string& path, Layer& model);

// Reads only the file's header (read_safetensors_metadata: the weights are not read, so a resume
// or a `sample` reads a large checkpoint once) and checks it is a ctrax checkpoint.
CheckpointInfo read_checkpoint_info(const std::string& path);

// PRETRAINED WEIGHTS INTO ANOTHER MODEL. Trax's Layer.init_from_file(file, weights_only) loads a
// checkpoint into a model of the same tree: here that is init_from_file(path, model, weights_only)
// — load_weights when weights_only, else load_checkpoint without optimizers (weights and state).
// Fine-tuning needs more: the body of one model (a masked-LM encoder's embedding and blocks) in
// another (a classifier with a new head). load_matching_weights maps names: a model weight whose
// path starts with a map's `to` takes the file's weight named `from` + the rest of the path —
//     from "MaskedLM/", to "TransformerEncoder/":  "TransformerEncoder/Embedding_8000_256[1]/w"
//                                            reads "MaskedLM/Embedding_8000_256[1]/w"
// With several maps a weight takes the first whose `to` starts its name (a body that sits at
// other indices in the other tree maps weight by weight: models::MaskedLMBodyInTransformer).
// A name found in both must have the same shape and dtype, or nothing is loaded and the error
// names the weight, both shapes and the file; a model weight the file lacks keeps its
// initialisation; a file weight no model weight asks for goes unused. The report lists all three
// (the file's weight averages are used when it has one for every weight, as load_weights does).
// No match at all is an error too: the names, not the numbers, were wrong.
struct WeightMap {
  std::string from = "";   // prefix of the file's names
  std::string to = "";     // prefix of the model's names
};
struct LoadReport {
  std::vector<std::string> loaded, initialised, unused;   // model names; model names; file names
  bool averaged_weights = false;
  std::string describe() const;   // three counted lists, for a program to print
};
CheckpointInfo init_from_file(const std::string& path, Layer& model, bool weights_only = false);
LoadReport load_matching_weights(const std::string& path, Layer& model, const std::vector<WeightMap>& maps = {WeightMap{}});

}  // namespace ctrax::train
