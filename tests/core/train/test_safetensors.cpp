#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "core/train/safetensors.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::expect_tensor;
using ctrax::testing::TempDir;

namespace {

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

}  // namespace

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
}
