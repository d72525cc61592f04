// Corpus BLEU against values computed by hand and by sacreBLEU.
#include <doctest/doctest.h>

#include <cmath>

#include "core/data/bleu.hpp"

using namespace ctrax::data;

TEST_CASE("13a tokenization splits punctuation but keeps numbers and apostrophes whole") {
  CHECK(tokenize_13a("The dog bit the man.") == "The dog bit the man .");
  CHECK(tokenize_13a("It wasn't 3.5, \"really\"!") == "It wasn't 3.5 , \" really \" !");
  CHECK(tokenize_13a("well-known 1990-2000 &amp; (x)") == "well-known 1990 - 2000 & ( x )");
}

TEST_CASE("BLEU of a perfect hypothesis is 100; with no 4-gram match it is 0") {
  CHECK(corpus_bleu({"a b c d e"}, {{"a b c d e"}}).score == doctest::Approx(100.0));
  CHECK(corpus_bleu({"a b c d e"}, {{"e d c b a"}}).score == 0.0);
}

TEST_CASE("BLEU by hand: the cat sat on the mat") {
  // p1 = 5/6, p2 = 3/5, p3 = 2/4, p4 = 1/3, BP = 1  ->  100 · (1/12)^(1/4)
  const auto s = corpus_bleu({"the cat sat on the mat"}, {{"the cat sat on a mat"}});
  CHECK(s.score == doctest::Approx(100.0 * std::pow(1.0 / 12.0, 0.25)).epsilon(1e-9));
  CHECK(s.brevity_penalty == 1.0);
  // Too short: c = 3, r = 6, BP = exp(1 - 2).
  const auto short_ = corpus_bleu({"the cat sat on"}, {{"the cat sat on a mat"}});
  CHECK(short_.brevity_penalty == doctest::Approx(std::exp(1.0 - 6.0 / 4.0)));
  CHECK(short_.score == doctest::Approx(100.0 * std::exp(1.0 - 6.0 / 4.0)));
}

TEST_CASE("BLEU matches sacreBLEU's README example (two reference sets)") {
  const std::vector<std::string> hyps{"The dog bit the man.", "It wasn't surprising.",
                                      "The man had just bitten him."};
  const std::vector<std::vector<std::string>> refs{
      {"The dog bit the man.", "It was not unexpected.", "The man bit him first."},
      {"The dog had bit the man.", "No one was surprised.", "The man had bitten the dog."}};
  const auto s = corpus_bleu(hyps, refs);
  // sacrebleu: BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)
  CHECK(s.to_string() == "BLEU = 48.53 82.4/50.0/45.5/37.5 (BP = 0.943 ratio = 0.944 hyp_len = 17 ref_len = 18)");
}
