#include <doctest/doctest.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>
#include <map>

#include "core/data/idx.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::data;
using ctrax::testing::TempDir;

namespace {
// An unsigned-byte IDX file: magic, big-endian dims, values (cut short by `missing` bytes).
std::string idx_bytes(std::vector<std::uint32_t> dims, const std::vector<std::uint8_t>& values, std::size_t missing = 0,
                      std::uint8_t type = 0x08) {
  std::string b = {'\0', '\0', static_cast<char>(type), static_cast<char>(dims.size())};
  for (std::uint32_t d : dims)
    for (int s = 24; s >= 0; s -= 8) b.push_back(static_cast<char>((d >> s) & 0xFF));
  b.append(values.begin(), values.end());
  b.resize(b.size() - missing);
  return b;
}
void write(const std::string& path, const std::string& bytes, bool gz = false) {
  if (gz) {
    gzFile f = gzopen(path.c_str(), "wb");
    gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
    gzclose(f);
  } else {
    std::ofstream(path, std::ios::binary) << bytes;
  }
}
}  // namespace

TEST_CASE("IDX images and labels into tensors: values / 255, labels int32; plain or gzip") {
  TempDir dir;
  for (const bool gz : {false, true}) {
    CAPTURE(gz);
    write(dir / "images", idx_bytes({2, 2, 3}, {0, 51, 102, 153, 204, 255, 255, 0, 0, 0, 0, 255}), gz);
    write(dir / "labels", idx_bytes({2}, {7, 2}), gz);
    const ImageSet s = read_image_set(dir / "images", dir / "labels", 10);
    testing::expect_tensor(s.images, {2, 2, 3, 1}, {0, 0.2, 0.4, 0.6, 0.8, 1, 1, 0, 0, 0, 0, 1}, 1e-7);
    testing::expect_tensor(s.labels, {2}, {7, 2}, 0);
  }
}

TEST_CASE("IDX: a wrong magic, a truncated file, extra bytes, mismatched counts and labels out of range are refused, naming the file") {
  TempDir dir;
  const std::vector<std::uint8_t> pixels(2 * 2 * 3, 9);
  write(dir / "labels", idx_bytes({2}, {1, 2}));
  write(dir / "bad_magic", idx_bytes({2, 2, 3}, pixels, 0, 0x0D));   // float32 values: not MNIST's bytes
  CHECK_THROWS_WITH_AS(read_image_set(dir / "bad_magic", dir / "labels", 10),
                       doctest::Contains("bad_magic: not an unsigned-byte IDX file of 3 dimensions: its magic number is 0x00000D03"),
                       std::runtime_error);
  write(dir / "labels_as_images", idx_bytes({2}, {1, 2}));
  CHECK_THROWS_WITH_AS(read_image_set(dir / "labels_as_images", dir / "labels", 10), doctest::Contains("of 3 dimensions"),
                       std::runtime_error);
  write(dir / "truncated", idx_bytes({2, 2, 3}, pixels, 5));
  CHECK_THROWS_WITH_AS(read_image_set(dir / "truncated", dir / "labels", 10),
                       doctest::Contains("truncated: the header promises 12 values (2 × 2 × 3), the file holds 7: truncated"),
                       std::runtime_error);
  std::string longer = idx_bytes({2, 2, 3}, pixels) + "xx";
  write(dir / "longer", longer);
  CHECK_THROWS_WITH_AS(read_image_set(dir / "longer", dir / "labels", 10), doctest::Contains("more bytes than the header says"),
                       std::runtime_error);
  write(dir / "header", std::string("\0\0\x08\x03\0\0", 6));
  CHECK_THROWS_WITH_AS(read_idx(dir / "header"), doctest::Contains("truncated in its header"), std::runtime_error);
  write(dir / "images", idx_bytes({2, 2, 3}, pixels));
  write(dir / "three_labels", idx_bytes({3}, {1, 2, 3}));
  CHECK_THROWS_WITH_AS(read_image_set(dir / "images", dir / "three_labels", 10), doctest::Contains("holds 2 images but"),
                       std::runtime_error);
  write(dir / "label_12", idx_bytes({2}, {1, 12}));
  CHECK_THROWS_WITH_AS(read_image_set(dir / "images", dir / "label_12", 10),
                       doctest::Contains("label_12: item 1 has label 12, outside the 10 classes 0 … 9"), std::runtime_error);
  // A huge promised size is refused without allocating it.
  write(dir / "huge", idx_bytes({0xFFFFFFFF, 0xFFFFFFFF, 0xFFFFFFFF}, pixels));
  CHECK_THROWS_WITH_AS(read_idx(dir / "huge", 3), doctest::Contains("the file holds 12"), std::runtime_error);
  CHECK_THROWS_WITH_AS(load_fashion_mnist(dir.str(), "train"), doctest::Contains("apt-get install dataset-fashion-mnist"),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(load_fashion_mnist(dir.str(), "valid"), doctest::Contains("splits train and test"), std::invalid_argument);
}

TEST_CASE("Fashion-MNIST as Debian installs it: 60,000 + 10,000 images of 28×28, ten balanced classes") {
  if (!std::filesystem::exists(kFashionMnistDir)) {
    MESSAGE("skipped: " << kFashionMnistDir << " not found (apt-get install dataset-fashion-mnist)");
    return;
  }
  const ImageSet test = load_fashion_mnist(kFashionMnistDir, "test");
  CHECK(test.images.shape() == Shape{10000, 28, 28, 1});
  std::map<int, int> per_class;
  for (const double y : test.labels.to_doubles()) ++per_class[static_cast<int>(y)];
  CHECK(per_class.size() == 10);
  for (const auto& [label, count] : per_class) CHECK(count == 1000);
  CHECK(load_fashion_mnist(kFashionMnistDir, "train").labels.shape() == Shape{60000});
}
