#include "core/layer/chunk.hpp"

#include <fmt/format.h>

#include "core/layer/fn.hpp"
#include "core/layer/scan.hpp"
#include "core/layer/serial.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::layers {

LayerPtr Chunk(LayerPtr layer, std::int64_t chunk_size, bool pass_unchunkable, std::source_location created) {
  if (chunk_size < 1) return layer;
  const int n_in = layer->n_in(), n_out = layer->n_out();
  auto to_chunks = FnStack("ReshapeToChunks", n_in, n_in, [chunk_size, pass_unchunkable](const Stack& xs) {
    Stack out;
    for (const Tensor& x : xs) {
      if (x.rank() < 1) throw std::invalid_argument(fmt::format("Chunk needs a batch axis, got {}", x.signature()));
      const std::int64_t batch = x.shape()[0];
      std::int64_t size = chunk_size;
      if (batch % size != 0) {
        if (!pass_unchunkable)
          throw std::invalid_argument(fmt::format("Chunk size {} must divide batch size {}", size, batch));
        size = batch;
      }
      Shape s{batch / size, size};
      s.insert(s.end(), x.shape().begin() + 1, x.shape().end());
      out.push_back(reshape(x, s));
    }
    return out;
  }, created);
  auto from_chunks = FnStack("ReshapeFromChunks", n_out, n_out, [](const Stack& ys) {
    Stack out;
    for (const Tensor& y : ys) {
      Shape s{y.shape()[0] * y.shape()[1]};
      s.insert(s.end(), y.shape().begin() + 2, y.shape().end());
      out.push_back(reshape(y, s));
    }
    return out;
  }, created);
  return Serial(to_chunks, Scan(std::move(layer), 0, 0, Mode::train, created), from_chunks, created);
}

}  // namespace ctrax::layers
