#include "layers/embedding.hpp"

#include <fmt/format.h>

#include "core/decode/internal/token_program.hpp"
#include "core/layer/fn.hpp"
#include "core/tensor/ops.hpp"
#include "layers/initializers.hpp"

namespace ctrax::layers {

namespace {

class EmbeddingLayer final : public Layer {
 public:
  EmbeddingLayer(std::int64_t vocab_size, std::int64_t d_feature, Initializer initializer, std::source_location created)
      : Layer(fmt::format("Embedding_{}_{}", vocab_size, d_feature), 1, 1, created),
        vocab_size_(vocab_size),
        d_feature_(d_feature),
        initializer_(std::move(initializer)) {
    if (vocab_size <= 0 || d_feature <= 0)
      throw std::invalid_argument(fmt::format(
          "Embedding needs vocab_size > 0 and d_feature > 0, got {} and {}", vocab_size,
          d_feature));
  }

 protected:
  void init_weights_and_state(const Signature& input) override {
    add_weight("table", {vocab_size_, d_feature_}, weight_dtype(input.at(0).dtype), initializer_, rng());
  }

  Stack forward(const Stack& inputs) override {
    if (inputs[0].dtype() != DType::int32)
      throw std::invalid_argument(fmt::format("{} expects int32 token ids, got {}", name(),
                                              inputs[0].signature()));
    return {embedding(weights()[0], inputs[0])};
  }

  bool lower_token(decode::TokenProgramBuilder& b) override {
    return b.replace_top(1, [&](const auto& ids) { return b.embed(ids[0], weights().at(0)); });
  }

 private:
  std::int64_t vocab_size_, d_feature_;
  Initializer initializer_;
};

}  // namespace

LayerPtr Embedding(std::int64_t vocab_size, std::int64_t d_feature, EmbeddingOptions options, std::source_location created) {
  if (!options.kernel_initializer) throw std::invalid_argument("Embedding: the kernel_initializer is empty");
  return std::make_shared<EmbeddingLayer>(vocab_size, d_feature, std::move(options.kernel_initializer), created);
}

LayerPtr ScaleBy(double factor, std::source_location created) {
  return Fn(fmt::format("ScaleBy({:.4g})", factor), std::function<Tensor(TensorArg)>([factor](const Tensor& x) { return x * factor; }), 1,
            created);
}

}  // namespace ctrax::layers
