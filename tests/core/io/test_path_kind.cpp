// check_regular_file: a path that is there but is not a file is refused, naming what it is.
#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <filesystem>

#include "core/io/path_kind.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/files.hpp"

using namespace ctrax;
using ctrax::testing::TempDir;
using ctrax::testing::error_of;

TEST_CASE("check_regular_file passes a file, a link to one and a path that is not there") {
  TempDir dir;
  const std::string file = dir / "a.txt", link = dir / "b.txt";
  ctrax::testing::write_bytes(file, "x");
  std::filesystem::create_symlink(file, link);
  CHECK_NOTHROW(io::check_regular_file(file, "a file"));
  CHECK_NOTHROW(io::check_regular_file(link, "a file"));
  CHECK_NOTHROW(io::check_regular_file(dir / "none.txt", "a file"));
}

TEST_CASE("check_regular_file names what the path is instead, and what was expected") {
  TempDir dir;
  CHECK(error_of([&] { io::check_regular_file(dir.str(), "a checkpoint"); }) ==
        dir.str() + ": not a regular file (a directory), expected a checkpoint");
  CHECK(error_of([] { io::check_regular_file("/dev/zero", "a file"); }) ==
        "/dev/zero: not a regular file (a character device), expected a file");
  const std::string fifo = dir / "pipe", zero = dir / "zero";
  REQUIRE(::mkfifo(fifo.c_str(), 0644) == 0);
  CHECK(error_of([&] { io::check_regular_file(fifo, "the run's metrics"); }) ==
        fifo + ": not a regular file (a named pipe), expected the run's metrics");
  std::filesystem::create_symlink("/dev/zero", zero);   // followed: the link's target is what is read
  CHECK(error_of([&] { io::check_regular_file(zero, "a checkpoint"); }) ==
        zero + ": not a regular file (a character device), expected a checkpoint");

  const std::string socket_path = dir / "s";
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  REQUIRE(socket_path.size() < sizeof address.sun_path);
  std::memcpy(address.sun_path, socket_path.c_str(), socket_path.size() + 1);
  REQUIRE(::bind(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0);
  CHECK(error_of([&] { io::check_regular_file(socket_path, "a file"); }) ==
        socket_path + ": not a regular file (a socket), expected a file");
  ::close(fd);
}

TEST_CASE("create_directories makes the directory and its parents, and says why when it cannot") {
  TempDir dir;
  const std::string run = dir / "runs/a/b";
  io::create_directories(run, "the run's directory");
  CHECK(std::filesystem::is_directory(run));
  CHECK_NOTHROW(io::create_directories(run, "the run's directory"));   // there already: nothing to do

  const std::string file = dir / "notes.txt";
  ctrax::testing::write_bytes(file, "x");
  CHECK(error_of([&] { io::create_directories(file, "the run's directory"); }) ==
        file + ": not a directory (a regular file), expected the run's directory");
  CHECK(error_of([&] { io::create_directories(file + "/run", "the run's directory"); }) ==
        file + "/run: cannot make the run's directory: Not a directory");
  CHECK(error_of([] { io::create_directories("/dev/null", "the run's directory"); }) ==
        "/dev/null: not a directory (a character device), expected the run's directory");
}
