// Atomic writes: the new content or the old, never half; a full disk is an error naming the file.
#include <doctest/doctest.h>

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "core/io/atomic_file.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/file_size_limit.hpp"
#include "tests/files.hpp"

using namespace ctrax;
using ctrax::testing::FileSizeLimit;
using ctrax::testing::TempDir;
using ctrax::testing::error_of;
using ctrax::testing::read_bytes;

TEST_CASE("write_atomically writes the parts back to back and leaves no temporary") {
  TempDir dir;
  const std::string path = dir / "a.txt";
  const std::string_view parts[] = {"one ", "two ", "three"};
  io::write_atomically(path, parts);
  CHECK(read_bytes(path) == "one two three");
  io::write_atomically(path, "again");
  CHECK(read_bytes(path) == "again");
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_CASE("a full disk fails the write with the system's reason and keeps the old file") {
  TempDir dir;
  const std::string path = dir / "metrics.jsonl";
  io::write_atomically(path, "the history\n");
  const std::string big(1 << 16, 'x');
  {
    FileSizeLimit full(1000);
    const std::string e = error_of([&] { io::write_atomically(path, big); });
    CHECK(e == path + ".tmp: writing failed: File too large");
  }
  CHECK(read_bytes(path) == "the history\n");
  CHECK_FALSE(std::filesystem::exists(path + ".tmp"));
}

TEST_CASE("an unwritable directory is an error naming the file") {
  CHECK(error_of([] { io::write_atomically("/nonexistent-dir/x", "y"); }) ==
        "/nonexistent-dir/x.tmp: opening for writing failed: No such file or directory");
}

TEST_CASE("copy_atomically copies byte for byte") {
  TempDir dir;
  std::string bytes;
  for (int i = 0; i < 3000000; ++i) bytes.push_back(static_cast<char>(i * 31));
  io::write_atomically(dir / "a", bytes);
  io::copy_atomically(dir / "a", dir / "b");
  CHECK(read_bytes(dir / "b") == bytes);
  CHECK(error_of([&] { io::copy_atomically(dir / "absent", dir / "c"); }) ==
        dir / "absent" + ": opening for reading failed: No such file or directory");
}

TEST_CASE("a copy that fails half way (a full disk) keeps the old file and leaves no temporary") {
  TempDir dir;
  io::write_atomically(dir / "best", "the best so far");
  io::write_atomically(dir / "model", std::string(3 << 20, 'w'));   // three of the copy's 1 MiB reads
  {
    FileSizeLimit full(1500000);
    CHECK(error_of([&] { io::copy_atomically(dir / "model", dir / "best"); }) ==
          dir / "best" + ".tmp: writing failed: File too large");
  }
  CHECK(read_bytes(dir / "best") == "the best so far");
  CHECK_FALSE(std::filesystem::exists(dir / "best" + ".tmp"));
}

TEST_CASE("append_whole appends a record whole, or not at all on a full disk") {
  TempDir dir;
  const std::string path = dir / "metrics.jsonl";
  io::append_whole(path, "one\n");
  io::append_whole(path, "two\n");
  CHECK(read_bytes(path) == "one\ntwo\n");
  {
    FileSizeLimit full(10);   // room for 2 more bytes: a partial write, cut back
    CHECK(error_of([&] { io::append_whole(path, "three\n"); }) == path + ": appending failed: File too large");
  }
  CHECK(read_bytes(path) == "one\ntwo\n");
}

TEST_CASE("append_whole refuses a pipe, which it would wait on for a reader forever") {
  TempDir dir;
  const std::string fifo = dir / "metrics.jsonl";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(error_of([&] { io::append_whole(fifo, "one\n"); }) ==
        fifo + ": not a regular file (a named pipe), expected a file to append to");
  CHECK(error_of([&] { io::append_whole(dir.str(), "one\n"); }).find("not a regular file") != std::string::npos);
}
