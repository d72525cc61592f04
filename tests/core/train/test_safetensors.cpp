#include <doctest/doctest.h>
#include <fmt/format.h>

#include <filesystem>
#include <fstream>

#include "core/train/safetensors.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/file_size_limit.hpp"
#include "tests/files.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::expect_tensor;
using ctrax::testing::TempDir;
using ctrax::testing::read_bytes;
using ctrax::testing::write_bytes;

TEST_CASE("safetensors round trip: every dtype, shapes, names in order, metadata") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  write_safetensors(path,
                    {{"b/f32", tensor({1.f, 2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3})},
                     {"a/f64", tensor({0.5}, {1})},
                     {"i32", tensor({7, -8}, {2})},
                     {"bool", tensor({true, false, true}, {3})},
                     {"scalar", Tensor::scalar(2.5)}},
                    {{"hello", "world"}});
  const auto file = read_safetensors(path);
  REQUIRE(file.tensors.size() == 5);
  CHECK(file.tensors[0].first == "b/f32");
  expect_tensor(file.tensors[0].second, {2, 3}, {1, 2, 3, 4, 5, 6});
  CHECK(file.tensors[1].second.dtype() == DType::float64);
  expect_tensor(file.tensors[2].second, {2}, {7, -8});
  expect_tensor(file.tensors[3].second, {3}, {1, 0, 1});
  expect_tensor(file.tensors[4].second, {}, {2.5});
  CHECK(file.metadata == Metadata{{"hello", "world"}});
}

TEST_CASE("the file is standard safetensors: u64 header length, JSON header, aligned data") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  write_safetensors(path, {{"x", tensor({1.f, 2.f}, {2})}});
  const std::string bytes = read_bytes(path);
  std::uint64_t n = 0;
  for (int i = 0; i < 8; ++i) n |= static_cast<std::uint64_t>(static_cast<unsigned char>(bytes[i])) << (8 * i);
  CHECK(n % 8 == 0);
  CHECK(bytes.size() == 8 + n + 8);
  const std::string header = bytes.substr(8, n);
  CHECK(header.find(R"("x":{"data_offsets":[0,8],"dtype":"F32","shape":[2]})") != std::string::npos);
  CHECK(header.find(R"("__metadata__":{"crc32":)") != std::string::npos);
}

TEST_CASE("a truncated file is an error naming the file") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  write_safetensors(path, {{"x", Tensor::ones({100})}});
  const std::string bytes = read_bytes(path);
  write_bytes(path, bytes.substr(0, bytes.size() - 10));
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains((path + ": truncated").c_str()),
                       std::runtime_error);
  write_bytes(path, bytes.substr(0, 5));
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("truncated"), std::runtime_error);
}

TEST_CASE("a flipped data byte is caught by the checksum") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  write_safetensors(path, {{"x", Tensor::ones({100})}});
  std::string bytes = read_bytes(path);
  bytes[bytes.size() - 7] ^= 0x10;
  write_bytes(path, bytes);
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("corrupted: data checksum"),
                       std::runtime_error);
}

TEST_CASE("a file that is not safetensors is an error naming the file") {
  TempDir dir;
  const std::string path = dir / "notes.txt";
  write_bytes(path, "These are not the tensors you are looking for.\n");
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains((path + ": not a safetensors file").c_str()),
                       std::runtime_error);
  CHECK_THROWS_WITH_AS(read_safetensors(dir / "absent"), doctest::Contains("cannot open"),
                       std::runtime_error);
}

TEST_CASE("a failed write leaves the previous file intact and no temporary behind") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  write_safetensors(path, {{"x", tensor({1.f}, {1})}});
  const std::string before = read_bytes(path);
  CHECK_THROWS_AS(write_safetensors(path, {{"x", tensor({2.f}, {1})}, {"y", Tensor::meta({3})}}),
                  std::runtime_error);
  CHECK(read_bytes(path) == before);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
  CHECK_THROWS_AS(write_safetensors(path, {{"x", tensor({2.f}, {1})}, {"x", tensor({2.f}, {1})}}),
                  std::runtime_error);
  {
    ctrax::testing::FileSizeLimit full_disk(64);
    CHECK_THROWS_WITH_AS(write_safetensors(path, {{"x", Tensor::ones({1000})}}),
                         doctest::Contains((path + ".tmp: writing failed").c_str()), std::runtime_error);
  }
  CHECK(read_bytes(path) == before);
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
}

namespace {

// A safetensors file made by hand: `header` JSON, then `data`.
void handmade(const std::string& path, const std::string& header, const std::string& data) {
  std::string bytes(8, '\0');
  for (int i = 0; i < 8; ++i) bytes[static_cast<std::size_t>(i)] = static_cast<char>(std::uint64_t{header.size()} >> (8 * i));
  write_bytes(path, bytes + header + data);
}

}  // namespace

TEST_CASE("the header is covered by a checksum too: a flipped digit in the metadata is caught") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  write_safetensors(path, {{"x", Tensor::ones({4})}}, {{"step", "1500"}});
  std::string bytes = read_bytes(path);
  const auto at = bytes.find("1500");
  REQUIRE(at != std::string::npos);
  bytes[at + 1] = '9';   // step 1900
  write_bytes(path, bytes);
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains((path + ": corrupted: header checksum").c_str()),
                       std::runtime_error);
}

TEST_CASE("data_offsets must tile the data section: overlaps and gaps are errors") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  const std::string eight(8, '\1');
  handmade(path, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight);
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("starts at byte 0 of the data section, expected 8 (it overlaps"),
                       std::runtime_error);
  handmade(path, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", eight);
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("tensor 'a' starts at byte 4 of the data section, expected 0 (a gap)"),
                       std::runtime_error);
  handmade(path, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", eight);
  CHECK(read_safetensors(path).tensors.size() == 1);   // the same file, tiled: fine
}

TEST_CASE("a huge or negative shape is an error before anything is allocated") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  handmade(path, R"({"a":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", std::string(8, '\0'));
  CHECK_THROWS_WITH_AS(read_safetensors(path),
                       doctest::Contains("tensor 'a' has shape [4611686018427387904,4], too large to exist"),
                       std::runtime_error);
  handmade(path, R"({"a":{"dtype":"F32","shape":[-2,-1],"data_offsets":[0,8]}})", std::string(8, '\0'));
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("tensor 'a' has a negative extent -2"), std::runtime_error);
  handmade(path, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,8]}})", std::string(8, '\0'));
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("tensor 'a' is float32 (1,) (4 bytes) but its data_offsets span 8 bytes"),
                       std::runtime_error);
  handmade(path, R"({"a":{"dtype":"F32","shape":"big","data_offsets":[0,8]}})", std::string(8, '\0'));
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("shape that is not a list"), std::runtime_error);
}

// Found by scripts/fuzz.sh: an extent of 2.5 was read as 2, and one past 2^64 (JSON keeps it as a
// double) was turned into an integer — undefined behaviour.
TEST_CASE("extents and data_offsets must be whole numbers: no fraction, nothing past 2^63") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  const std::pair<const char*, const char*> cases[] = {
      {R"({"a":{"dtype":"F32","shape":[2.5],"data_offsets":[0,8]}})",
       "tensor 'a' has shape [2.5]: its extent 2.5 is not a whole number"},
      {R"({"a":{"dtype":"F32","shape":[222222222222222222222222222,2],"data_offsets":[0,8]}})", "is not a whole number"},
      {R"({"a":{"dtype":"BOOL","shape":[9223372036854775809],"data_offsets":[0,8]}})", "too large to exist"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8.0]}})",
       "tensor 'a' has data_offsets [0,8.0], expected [begin, end] in bytes"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[-8,0]}})", "has data_offsets [-8,0]"},
      {R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}})", "begin ≤ end"},
  };
  for (const auto& [header, expected] : cases) {
    CAPTURE(header);
    handmade(path, header, std::string(8, '\0'));
    CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains(expected), std::runtime_error);
  }
}

// A file whose header lists a tensor of `bytes` bytes (F32, a name of its own) beside a small
// kept one, its data section sparse (no disk taken) and without checksums.
void write_sparse_safetensors(const std::string& path, const std::string& big_name, std::uint64_t bytes) {
  std::string header = fmt::format(R"({{"{}":{{"dtype":"F32","shape":[{}],"data_offsets":[0,{}]}},)"
                                   R"("small":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}}}})",
                                   big_name, bytes / 4, bytes, bytes, bytes + 4);
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string file(8, '\0');
  for (int i = 0; i < 8; ++i) file[static_cast<std::size_t>(i)] = static_cast<char>(header.size() >> (8 * i));
  write_bytes(path, file + header);
  std::filesystem::resize_file(path, 8 + header.size() + bytes + 4);
}

TEST_CASE("tensors too large to load are refused before they are read; those left out do not count") {
  // A model loading a checkpoint holds its own weights beside the file's: tensors of more than half
  // the memory would read for minutes and end in std::bad_alloc or the kernel's kill.
  TempDir dir;
  const std::string path = dir / "huge.safetensors";
  write_sparse_safetensors(path, "x", std::uint64_t{1} << 40);   // 1.1 TB
  CHECK_THROWS_WITH_AS(read_safetensors(path),
                       doctest::Contains((path + ": 1099.5 GB of tensors to load (1099.5 GB on disk), and loading "
                                                 "takes twice that (the model's own, then the file's): more than this "
                                                 "machine's memory (").c_str()),
                       std::runtime_error);
  // Left out by `keep` (an optimizer's slots, for inference), the same bytes are not loaded, and
  // without a checksum to compute they are not even read.
  const auto file = read_safetensors(path, [](const std::string& name) { return name == "small"; });
  REQUIRE(file.tensors.size() == 1);
  expect_tensor(file.tensors[0].second, {1}, {0});
}

TEST_CASE("the metadata alone is read from the header: the data is neither read nor checked") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  write_safetensors(path, {{"x", Tensor::ones({100})}}, {{"step", "7"}});
  std::string bytes = read_bytes(path);
  bytes[bytes.size() - 5] ^= 1;   // a flipped data byte: the whole read catches it, the header read does not look
  write_bytes(path, bytes);
  CHECK(read_safetensors_metadata(path) == Metadata{{"step", "7"}});
  CHECK_THROWS_WITH_AS(read_safetensors(path), doctest::Contains("corrupted: data checksum"), std::runtime_error);
  // The header itself is checked as in the whole read: a file of the wrong size, a flipped digit.
  write_bytes(path, bytes.substr(0, bytes.size() - 4));
  CHECK_THROWS_WITH_AS(read_safetensors_metadata(path), doctest::Contains((path + ": truncated").c_str()),
                       std::runtime_error);
  const std::size_t digit = bytes.find("\"7\"");
  REQUIRE(digit != std::string::npos);
  bytes[digit + 1] = '8';
  write_bytes(path, bytes);
  CHECK_THROWS_WITH_AS(read_safetensors_metadata(path), doctest::Contains("corrupted: header checksum"),
                       std::runtime_error);
  // Nor is it refused for its size: only loading it needs the memory.
  write_safetensors(path, {{"x", Tensor::ones({100})}}, {{"step", "7"}});
  std::filesystem::resize_file(path, std::uintmax_t{1} << 40);
  CHECK_THROWS_WITH_AS(read_safetensors_metadata(path), doctest::Contains("bytes after the last tensor"),
                       std::runtime_error);
}

TEST_CASE("read with `keep`: the others are not kept, but their bytes still count in the checksum") {
  TempDir dir;
  const std::string path = dir / "t.safetensors";
  // "big" spans several of the reader's 1 MiB chunks.
  write_safetensors(path, {{"a", tensor({1.f, 2.f}, {2})}, {"big", Tensor::ones({600000})}, {"c", tensor({3}, {1})}});
  const auto keep = [](const std::string& name) { return name != "big"; };
  const auto file = read_safetensors(path, keep);
  REQUIRE(file.tensors.size() == 2);
  CHECK(file.tensors[0].first == "a");
  expect_tensor(file.tensors[1].second, {1}, {3});
  std::string bytes = read_bytes(path);
  bytes[bytes.size() - 4 - 1500000] ^= 1;   // inside "big", past its first chunk
  write_bytes(path, bytes);
  CHECK_THROWS_WITH_AS(read_safetensors(path, keep), doctest::Contains("corrupted: data checksum"), std::runtime_error);
  write_bytes(path, bytes.substr(0, bytes.size() - 2000000));
  CHECK_THROWS_WITH_AS(read_safetensors(path, keep), doctest::Contains((path + ": truncated").c_str()),
                       std::runtime_error);
}
