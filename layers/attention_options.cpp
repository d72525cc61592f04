#include "layers/attention_options.hpp"

#include <fmt/format.h>

#include <stdexcept>

namespace ctrax::layers {

void check_attention_options(const AttentionOptions& o, const char* layer, bool reads_max_inference_length,
                             bool reads_cache_KV_in_predict) {
  const AttentionOptions defaults;
  if (!reads_max_inference_length && o.max_inference_length != defaults.max_inference_length)
    throw std::invalid_argument(fmt::format("{}: .max_inference_length = {} is CausalAttention's option (its KV cache); "
                                            "{} has no KV cache", layer, o.max_inference_length, layer));
  if (!reads_cache_KV_in_predict && o.cache_KV_in_predict)
    throw std::invalid_argument(fmt::format("{}: .cache_KV_in_predict is AttentionQKV's option; {} does not read it",
                                            layer, layer));
}

}  // namespace ctrax::layers
