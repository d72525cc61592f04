// libFuzzer target: the dataset readers (plain or gzip text, labelled TSV, CSV and Q/A CSV,
// parallel text, review cleaning) and a run's metrics.jsonl on arbitrary bytes. Each must read the
// input or throw std::runtime_error naming the file and line — never crash or hang. The bytes go to
// a file (the readers take paths), split at the first NUL into the two sides of a parallel corpus.
//   scripts/fuzz.sh text_readers 600
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/data/text_files.hpp"
#include "core/train/report.hpp"
#include "tests/fuzz/fuzz_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string all = fuzz::write_temp("all", bytes);
  const std::size_t nul = bytes.find('\0');
  const std::string source = fuzz::write_temp("source", bytes.substr(0, nul));
  const std::string target = fuzz::write_temp("target", nul == std::string::npos ? "" : bytes.substr(nul + 1));
  fuzz::expect_clean([&] { ctrax::data::read_labeled_tsv(all, 2); });
  fuzz::expect_clean([&] { ctrax::data::read_text(all); });
  fuzz::expect_clean([&] { ctrax::data::read_csv(all); });
  fuzz::expect_clean([&] { ctrax::data::read_qa_csv(all, 3); });
  fuzz::expect_clean([&] { ctrax::data::read_parallel(source, target); });
  fuzz::expect_clean([&] { (void)ctrax::train::read_metrics(all); });
  (void)ctrax::data::clean_review(bytes);
  for (const auto& p : {all, source, target}) ::unlink(p.c_str());
  return 0;
}
