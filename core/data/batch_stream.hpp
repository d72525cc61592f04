// ctrax/core/data/batch_stream.hpp — labeled data as batch i of a deterministic stream.
//
// A BatchStream is a function giving batch i, i = 0, 1, 2, ... (i counts training steps of the
// task that reads it). A batch is a Stack laid out as the model and its loss expect, Trax's
// (inputs..., targets, weights). Random access is what makes resuming exact: a run resumed at
// step 500 asks for batch 500 and gets the same batch the uninterrupted run got. Most data
// sources are naturally indexable (epoch = i / batches_per_epoch, shuffled by a seeded
// permutation per epoch: batching.hpp). A plain generator can be wrapped with from_generator(),
// which replays it from the start to reach a position.
#pragma once

#include <cstdint>
#include <functional>

#include "core/tensor/stack.hpp"

namespace ctrax::data {

using BatchStream = std::function<Stack(std::int64_t index)>;

// Adapts a generator of batches: batch i is the (i+1)-th value of a fresh `make()` stream.
// Sequential access costs nothing extra; asking for an earlier batch restarts the stream.
BatchStream from_generator(std::function<std::function<Stack()>()> make);

}  // namespace ctrax::data
