// A run's data fingerprint: names, sizes and CRC-32s of what it reads, and every change named.
#include <doctest/doctest.h>
#include <zlib.h>

#include <filesystem>
#include <string>

#include "core/data/fingerprint.hpp"
#include "core/data/text_files.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/files.hpp"

using namespace ctrax::data;
using ctrax::testing::TempDir;
using ctrax::testing::error_of;
using ctrax::testing::write_bytes;

TEST_CASE("fingerprint: a file, or a directory's data files by relative name, with sizes and CRC-32s") {
  TempDir dir;
  write_bytes(dir / "d/a.txt", "hello");
  write_bytes(dir / "d/sub/b.txt", "world!");
  write_bytes(dir / "d/.git/HEAD", "ref");
  const auto f = fingerprint(dir / "d");
  REQUIRE(f.size() == 2);
  CHECK(f[0].name == "a.txt");
  CHECK(f[0].bytes == 5);
  CHECK(f[0].crc32 == crc32(0, reinterpret_cast<const Bytef*>("hello"), 5));
  CHECK(f[1].name == "sub/b.txt");
  const auto one = fingerprint(dir / "d/a.txt");
  REQUIRE(one.size() == 1);
  CHECK(one[0].name == "");
  CHECK(error_of([&] { fingerprint(dir / "none"); }) == dir / "none" + ": no such file or directory");
}

TEST_CASE("fingerprint_changes names each changed, missing and new file; none when the same") {
  TempDir dir;
  write_bytes(dir / "d/a.txt", "hello");
  write_bytes(dir / "d/b.txt", "world");
  const auto before = fingerprint(dir / "d");
  CHECK(fingerprint_changes(before, fingerprint(dir / "d")).empty());
  write_bytes(dir / "d/a.txt", "hellO");   // same size, other bytes
  std::filesystem::remove(dir / "d/b.txt");
  write_bytes(dir / "d/c.txt", "new");
  const auto changes = fingerprint_changes(before, fingerprint(dir / "d"));
  REQUIRE(changes.size() == 3);
  CHECK(changes[0].starts_with("changed: a.txt: 5 bytes, crc32 "));
  CHECK(changes[1].starts_with("missing: b.txt (was 5 bytes"));
  CHECK(changes[2].starts_with("new file: c.txt (3 bytes"));
}

TEST_CASE("fingerprint refuses data too large to read before it reads it") {
  // A sparse file past max_text_bytes(): hashing it would read it all (a minute for 100 GB), and the
  // run would then refuse it anyway (text_files.hpp).
  TempDir dir;
  write_bytes(dir / "big.txt", "a");
  std::filesystem::resize_file(dir / "big.txt", max_text_bytes() + 1);
  CHECK(error_of([&] { fingerprint(dir / "big.txt"); }).find("of text, more than one reading may hold here") !=
        std::string::npos);
}
