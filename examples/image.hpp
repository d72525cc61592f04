// examples/image.hpp — what the image program's files share (image.cpp: the data and `train`;
// image_use.cpp: `eval`).
#pragma once

#include <cstdint>
#include <string>

#include "core/data/idx.hpp"
#include "core/layer/layer.hpp"
#include "core/tensor/random.hpp"
#include "core/train/run.hpp"
#include "models/registry.hpp"

namespace ctrax::examples::image {

// The model a run trains, from its stored configuration (the keys `train` writes).
models::ModelSpec model_spec(const train::StoredConfig& config);
// Images (N, 28, 28, 1) padded with zeros to (N, side, side, 1) (WideResnet's AvgPool(8×8) needs 32).
std::int64_t side_for(const std::string& model);

// Rows `which` of a set, padded to side × side; with `augment`, each image shifted by up to 2
// pixels each way (zeros fill) and flipped left–right half the time, drawn from `rng`.
Tensor batch_images(const Tensor& images, const std::vector<std::int64_t>& which, std::int64_t side, bool augment,
                    const Rng& rng);
Tensor batch_labels(const Tensor& labels, const std::vector<std::int64_t>& which);

int eval_command(const std::string& data_dir, const std::string& out, int threads, std::int64_t batch_size,
                 const std::string& json_path);

}  // namespace ctrax::examples::image
