// examples/lm.hpp — what the lm program's two files share (lm.cpp: the data and `train`;
// lm_use.cpp: `eval`, `sample` and `attention` on a trained run).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include "core/data/tokenizer.hpp"
#include "core/decode/sampling.hpp"

namespace ctrax::examples::lm {

// The corpus `train` reads when --data is empty: the Debian fortunes package.
inline constexpr const char* kFortunes = "/usr/share/games/fortunes";

// The run's tokenizer: "char" (bytes) or the run's SentencePiece model (OUT/spm.model).
std::unique_ptr<data::Tokenizer> load_tokenizer(const std::string& kind, const std::string& out);
// The text of `data` (or the fortunes corpus), split 90% training, 10% validation.
std::pair<std::string, std::string> split_text(const std::string& data);

int eval_command(const std::string& out, int threads, const std::string& data_path, std::int64_t length,
                 std::int64_t batch_size);
// The draw's settings (temperature, top_k, top_p) come in `draw`; each sample's seed is derived from `seed`.
int sample_command(const std::string& out, int threads, const std::string& prompt, const decode::SampleOptions& draw,
                   std::int64_t length, std::int64_t n_samples, std::uint64_t seed);
int attention_command(const std::string& out, int threads, const std::string& text, const std::string& json_path);

}  // namespace ctrax::examples::lm
