// libFuzzer target: the dataset readers (plain or gzip text, labelled TSV, CSV and Q/A CSV,
// parallel text, review cleaning) and a run's metrics.jsonl on arbitrary bytes. Each must read the
// input or throw std::runtime_error naming the file and line — never crash or hang. The bytes go to
// a file (the readers take paths), split at the first NUL into the two sides of a parallel corpus.
//   scripts/fuzz.sh text_readers 600
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <stdexcept>
#include <string>

#include "core/data/text_files.hpp"
#include "core/train/report.hpp"

namespace {

std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = "/tmp/ctrax-fuzz-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const std::runtime_error&) {
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string bytes(reinterpret_cast<const char*>(data), size);
  const std::string all = write_temp("all", bytes);
  const std::size_t nul = bytes.find('\0');
  const std::string source = write_temp("source", bytes.substr(0, nul));
  const std::string target = write_temp("target", nul == std::string::npos ? "" : bytes.substr(nul + 1));
  expect_clean([&] { ctrax::data::read_labeled_tsv(all, 2); });
  expect_clean([&] { ctrax::data::read_text(all); });
  expect_clean([&] { ctrax::data::read_csv(all); });
  expect_clean([&] { ctrax::data::read_qa_csv(all, 3); });
  expect_clean([&] { ctrax::data::read_parallel(source, target); });
  expect_clean([&] { (void)ctrax::train::read_metrics(all); });
  (void)ctrax::data::clean_review(bytes);
  for (const auto& p : {all, source, target}) ::unlink(p.c_str());
  return 0;
}
