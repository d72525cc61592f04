// core/decode/internal/packed_weights.hpp — the decoders' weights, packed once per call.
//
// Not installed (an `internal/` folder): autoregressive_sample and beam_search open a
// PackedWeights over the model for their whole token loop, so every one-row product x·W reads W
// from panels packed at the first token (core/engine/weight_panels.hpp says why that is faster and
// gives the same bits). The model's weights do not change while a decoder runs.
#pragma once

#include <vector>

#include "core/engine/weight_panels.hpp"
#include "core/layer/layer.hpp"

namespace ctrax::decode {

// The scope over every matrix among the model's weights (rank 2, float32 or float64); with
// `pack` false, over none (the options' pack_weights).
class PackedWeights {
 public:
  explicit PackedWeights(const Layer& model, bool pack = true)
      : panels_(pack ? matrices_of(model) : std::vector<blas::WeightPanels::Matrix>{}) {}

 private:
  static std::vector<blas::WeightPanels::Matrix> matrices_of(const Layer& model) {
    std::vector<blas::WeightPanels::Matrix> out;
    for (const Tensor& w : model.all_weights())
      if (w.rank() == 2 && !w.is_meta() && (w.dtype() == DType::float32 || w.dtype() == DType::float64))
        out.push_back({.data = w.raw_data(), .rows = w.dim(0), .cols = w.dim(1), .element_size = itemsize(w.dtype())});
    return out;
  }
  blas::WeightPanels panels_;
};

}  // namespace ctrax::decode
