// ctrax/core/layer/chunk.hpp — Chunk: run a layer on the batch a few rows at a time.
//
//   Chunk(F, chunk_size)   Serial(ReshapeToChunks, Scan(F, axis 0, n_carry 0), ReshapeFromChunks)
//
// Every input (B, …) becomes (B / chunk_size, chunk_size, …), Scan applies F to one chunk after
// another, and the outputs join back into (B, …): the same outputs as F on the whole batch, with
// the activations of one chunk alive at a time. A batch the chunk size does not divide runs as one
// chunk (Trax's pass_unchunkable), or is an error with pass_unchunkable = false; a chunk size
// below 1 returns F itself. Trax's.
#pragma once

#include <source_location>

#include "core/layer/layer.hpp"

namespace ctrax::layers {

LayerPtr Chunk(LayerPtr layer, std::int64_t chunk_size, bool pass_unchunkable = true,
               std::source_location created = std::source_location::current());

}  // namespace ctrax::layers
