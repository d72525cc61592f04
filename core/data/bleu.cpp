#include "core/data/bleu.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <stdexcept>

namespace ctrax::data {

namespace {

void replace_all(std::string& s, const std::string& from, const std::string& to) {
  for (std::size_t p = s.find(from); p != std::string::npos; p = s.find(from, p + to.size()))
    s.replace(p, from.size(), to);
}

bool is_digit(char c) { return c >= '0' && c <= '9'; }
// mteval's [\{-\~\[-\` -\&\(-\+\:-\@\/]: ASCII punctuation except ' , - .
bool is_split_punct(char c) {
  return (c >= '{' && c <= '~') || (c >= '[' && c <= '`') || (c >= ' ' && c <= '&') ||
         (c >= '(' && c <= '+') || (c >= ':' && c <= '@') || c == '/';
}

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

using Counts = std::map<std::vector<std::string>, int>;
Counts ngrams(const std::vector<std::string>& t, std::size_t n) {
  Counts c;
  for (std::size_t i = 0; i + n <= t.size(); ++i) ++c[{t.begin() + static_cast<std::ptrdiff_t>(i), t.begin() + static_cast<std::ptrdiff_t>(i + n)}];
  return c;
}

}  // namespace

std::string tokenize_13a(const std::string& line) {
  std::string s = line;
  replace_all(s, "<skipped>", "");
  replace_all(s, "-\n", "");
  replace_all(s, "\n", " ");
  if (s.find('&') != std::string::npos) {
    replace_all(s, "&quot;", "\"");
    replace_all(s, "&amp;", "&");
    replace_all(s, "&lt;", "<");
    replace_all(s, "&gt;", ">");
  }
  std::string out;
  out.reserve(s.size() * 2);
  const std::string padded = " " + s + " ";
  for (std::size_t i = 1; i + 1 < padded.size(); ++i) {
    const char c = padded[i], prev = padded[i - 1], next = padded[i + 1];
    if (is_split_punct(c)) {
      out += ' ';
      out += c;
      out += ' ';
    } else if ((c == '.' || c == ',') && (!is_digit(prev) || !is_digit(next))) {
      out += ' ';
      out += c;
      out += ' ';
    } else if (c == '-' && is_digit(prev)) {
      out += " - ";
    } else {
      out += c;
    }
  }
  const auto tokens = split_ws(out);
  std::string joined;
  for (const auto& t : tokens) joined += (joined.empty() ? "" : " ") + t;
  return joined;
}

BleuScore corpus_bleu(const std::vector<std::string>& hypotheses,
                      const std::vector<std::vector<std::string>>& references) {
  if (references.empty()) throw std::invalid_argument("corpus_bleu: no references");
  for (const auto& r : references)
    if (r.size() != hypotheses.size())
      throw std::invalid_argument(fmt::format("corpus_bleu: {} hypotheses but a reference set of {}",
                                              hypotheses.size(), r.size()));
  std::array<double, 4> matches{}, totals{};
  BleuScore s;
  for (std::size_t i = 0; i < hypotheses.size(); ++i) {
    const auto hyp = split_ws(tokenize_13a(hypotheses[i]));
    std::vector<std::vector<std::string>> refs;
    for (const auto& r : references) refs.push_back(split_ws(tokenize_13a(r[i])));
    s.hypothesis_length += static_cast<std::int64_t>(hyp.size());
    // Closest reference length; ties go to the shorter (sacreBLEU).
    std::int64_t best = -1;
    for (const auto& r : refs) {
      const auto len = static_cast<std::int64_t>(r.size()), h = static_cast<std::int64_t>(hyp.size());
      if (best < 0 || std::abs(len - h) < std::abs(best - h) || (std::abs(len - h) == std::abs(best - h) && len < best))
        best = len;
    }
    s.reference_length += best;
    for (std::size_t n = 1; n <= 4; ++n) {
      Counts max_ref;
      for (const auto& r : refs)
        for (const auto& [g, c] : ngrams(r, n)) max_ref[g] = std::max(max_ref[g], c);
      for (const auto& [g, c] : ngrams(hyp, n)) {
        totals[n - 1] += c;
        auto it = max_ref.find(g);
        if (it != max_ref.end()) matches[n - 1] += std::min(c, it->second);
      }
    }
  }
  double log_sum = 0;
  bool zero = false;
  for (int n = 0; n < 4; ++n) {
    s.precisions[static_cast<std::size_t>(n)] = totals[static_cast<std::size_t>(n)] > 0 ? 100.0 * matches[static_cast<std::size_t>(n)] / totals[static_cast<std::size_t>(n)] : 0.0;
    if (matches[static_cast<std::size_t>(n)] == 0) zero = true;
    else log_sum += std::log(matches[static_cast<std::size_t>(n)] / totals[static_cast<std::size_t>(n)]);
  }
  const double c = static_cast<double>(s.hypothesis_length), r = static_cast<double>(s.reference_length);
  s.brevity_penalty = c == 0 ? 0.0 : c < r ? std::exp(1.0 - r / c) : 1.0;
  s.score = zero ? 0.0 : 100.0 * s.brevity_penalty * std::exp(log_sum / 4.0);
  return s;
}

std::string BleuScore::to_string() const {
  return fmt::format("BLEU = {:.2f} {:.1f}/{:.1f}/{:.1f}/{:.1f} (BP = {:.3f} ratio = {:.3f} hyp_len = {} ref_len = {})",
                     score, precisions[0], precisions[1], precisions[2], precisions[3], brevity_penalty,
                     reference_length ? static_cast<double>(hypothesis_length) / static_cast<double>(reference_length) : 0.0,
                     hypothesis_length, reference_length);
}

}  // namespace ctrax::data
