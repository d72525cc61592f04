// examples/sentiment_data.cpp — the sentiment program's data: labelled texts from a dataset
// directory or a Q,A,label CSV, as token ids.
#include <algorithm>
#include <memory>

#include "core/data/text_files.hpp"
#include "core/tensor/random.hpp"
#include "examples/sentiment.hpp"

namespace ctrax::examples::sentiment {

namespace {

bool is_csv(const std::string& path) {
  return path.ends_with(".csv") || path.ends_with(".csv.gz");
}

// A Q/A CSV's questions with their labels, cut into "train" (90%) and "test" (10%) by a fixed
// seeded permutation.
std::vector<data::LabeledText> csv_split(const std::string& path, const std::string& split, std::int32_t n_classes) {
  const auto rows = data::read_qa_csv(path, n_classes);
  const auto order = Rng(0x746f706963).permutation(static_cast<std::int64_t>(rows.size()));
  const auto n_test = rows.size() / 10;
  std::vector<data::LabeledText> out;
  for (std::size_t i = split == "test" ? 0 : n_test; i < (split == "test" ? n_test : rows.size()); ++i) {
    const auto& r = rows[static_cast<std::size_t>(order[i])];
    out.push_back({r.label, r.question});
  }
  return out;
}

}  // namespace

Encoded encode(const data::Tokenizer& tok, const std::vector<data::LabeledText>& ex,
               const std::vector<std::int64_t>& which, std::int64_t max_len, std::int64_t head) {
  Encoded e;
  for (auto i : which) {
    const auto& x = ex[static_cast<std::size_t>(i)];
    auto ids = tok.encode(x.text);
    e.n_empty += ids.empty();
    e.n_tokens += static_cast<std::int64_t>(ids.size());
    e.n_long += static_cast<std::int64_t>(ids.size()) > max_len;
    data::keep_head_and_tail(ids, max_len, head);
    e.tokens->push_back(std::move(ids));
    e.labels->push_back(x.label);
  }
  return e;
}

std::vector<std::int64_t> range(std::int64_t n) {
  std::vector<std::int64_t> r(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) r[static_cast<std::size_t>(i)] = i;
  return r;
}

std::vector<data::LabeledText> load_split(const std::string& dir, const std::string& split, std::int64_t limit,
                                          std::int32_t n_classes) {
  auto ex = is_csv(dir) ? csv_split(dir, split, n_classes) : data::load_labeled_split(dir, split, n_classes);
  if (limit > 0 && limit < static_cast<std::int64_t>(ex.size())) ex.resize(static_cast<std::size_t>(limit));
  return ex;
}

std::vector<data::LabeledText> sample_split(std::vector<data::LabeledText> ex, std::int64_t n, std::uint64_t seed,
                                            std::vector<data::LabeledText>* rest) {
  const auto size = static_cast<std::int64_t>(ex.size());
  if (n <= 0 || n >= size) return ex;
  std::vector<std::int64_t> order = Rng(seed).fold_in(54321).permutation(size);
  std::vector<char> chosen(static_cast<std::size_t>(size), 0);
  for (std::int64_t i = 0; i < n; ++i) chosen[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] = 1;
  std::vector<data::LabeledText> out;
  out.reserve(static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < ex.size(); ++i) {
    if (chosen[i]) out.push_back(std::move(ex[i]));
    else if (rest != nullptr) rest->push_back(std::move(ex[i]));
  }
  return out;
}

}  // namespace ctrax::examples::sentiment
