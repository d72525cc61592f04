// examples/translate.hpp — what the translate program's two files share (translate.cpp: the data
// and `train`; translate_use.cpp: `translate`, `align` and `bleu` on a trained run).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/data/text_files.hpp"

namespace ctrax::examples::translate {

// The pairs of DIR/<split>.<src> and DIR/<split>.<tgt> (gzipped or not), the first `limit` (0: all).
std::vector<data::TextPair> load_pairs(const std::string& dir, const std::string& split,
                                       const std::string& src, const std::string& tgt, std::int64_t limit);

int translate_command(const std::string& out, int threads, std::int64_t n_beams, double length_penalty,
                      const std::vector<std::string>& texts);
int align_command(const std::string& out, int threads, const std::string& text, const std::string& json_path);
int bleu_command(const std::string& data_dir, const std::string& out, int threads, const std::string& split,
                 std::int64_t batch_size, std::vector<std::int64_t> beams, double length_penalty,
                 std::int64_t limit, const std::string& save);

}  // namespace ctrax::examples::translate
