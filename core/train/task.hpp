// ctrax/core/train/task.hpp — what to train on and what to measure (trax/supervised/training.py).
//
// A TrainTask is: labeled data, a loss layer, an optimizer, and optionally a learning-rate
// schedule. An EvalTask is: labeled data and metric layers. A batch is a Stack laid out as the
// model and its loss expect, Trax's (inputs..., targets, weights): the model pops its inputs and
// leaves targets and weights underneath for the loss (`Serial(model, loss)`). Labeled data is a
// data::BatchStream (core/data/batch_stream.hpp): batch i by index, which makes resuming exact.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/data/batch_stream.hpp"
#include "core/layer/layer.hpp"
#include "core/train/optimizer.hpp"
#include "core/train/schedules.hpp"

namespace ctrax::train {

using data::BatchStream;

struct TrainTask {
  BatchStream labeled_data;                 // batch i: (inputs..., targets, weights)
  LayerPtr loss_layer;                      // e.g. WeightedCategoryCrossEntropy()
  OptimizerPtr optimizer;                   // e.g. Adam()
  Schedule lr_schedule = nullptr;           // none: the optimizer's learning_rate()
  std::int64_t n_steps_per_checkpoint = 100;
  std::int64_t n_steps_per_permanent_checkpoint = 0;   // > 0: also keep model_<step>.safetensors
  std::string loss_name = "";               // default: the loss layer's name
};

struct EvalTask {
  BatchStream labeled_data;                 // batches 0 .. n_eval_batches-1, at every evaluation
  std::vector<LayerPtr> metrics;            // each (model outputs, targets, weights) -> scalar
  std::vector<std::string> metric_names = {};  // default: the metric layers' names
  std::int64_t n_eval_batches = 1;          // reported value: the mean over these batches
};

}  // namespace ctrax::train
