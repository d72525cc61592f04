// ctrax/core/data/bleu.hpp — corpus BLEU (Papineni et al. 2002), computed as sacreBLEU does.
//
// Both sides are tokenized with the "13a" tokenizer of mteval-v13a.pl (sacreBLEU's default):
// punctuation becomes its own token, except '.' and ',' inside numbers and '-' except after a
// digit. Then, over the whole corpus:
//   p_n  = Σ_sentences Σ_ngrams min(count in hypothesis, max count in any reference)
//          ÷ Σ_sentences number of n-grams in the hypothesis,             n = 1..4
//   BP   = 1 if c > r else exp(1 − r/c)     c = hypothesis tokens, r = Σ closest reference length
//   BLEU = 100 · BP · exp(¼ Σ_n log p_n)    (0 if any p_n is 0: no smoothing)
// Corpus-level sums, not a mean of sentence scores: that is the standard definition.
#pragma once

#include <array>
#include <string>
#include <vector>

namespace ctrax::data {

struct BleuScore {
  double score = 0;                        // 0..100
  std::array<double, 4> precisions = {};   // p_1..p_4 in percent
  double brevity_penalty = 0;
  std::int64_t hypothesis_length = 0, reference_length = 0;
  std::string to_string() const;          // "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ...)"
};

// The 13a tokenization, tokens joined by single spaces.
std::string tokenize_13a(const std::string& line);

// references[k][i] is the k-th reference of hypothesis i (sacreBLEU's layout).
BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references);

}  // namespace ctrax::data
