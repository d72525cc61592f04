// libFuzzer target: the IDX reader (MNIST and Fashion-MNIST images and labels, plain or gzip) on
// arbitrary bytes. Each call must read the input or throw std::runtime_error naming the file —
// never crash, overflow, leak or hang. The first byte cuts the rest in two (images, then labels)
// for read_image_set; read_idx also reads the whole of it at any rank.
//   scripts/fuzz.sh idx 600
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/data/idx.hpp"
#include "tests/fuzz/fuzz_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size == 0) return 0;
  const std::string rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  // The cut: the first byte as a share of the rest (0 … 255 → none of it … all of it).
  const std::size_t cut = rest.size() * data[0] / 255;
  const std::string all = fuzz::write_temp("all", rest), images = fuzz::write_temp("images", rest.substr(0, cut)),
                    labels = fuzz::write_temp("labels", rest.substr(cut));
  for (int rank : {0, 1, 3}) fuzz::expect_clean([&] { (void)ctrax::data::read_idx(all, rank); });
  fuzz::expect_clean([&] { (void)ctrax::data::read_image_set(images, labels, 10); });
  for (const auto& p : {all, images, labels}) ::unlink(p.c_str());
  return 0;
}
