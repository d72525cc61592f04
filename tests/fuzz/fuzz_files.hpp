// What the fuzz targets that read files share: the input written to a file of its own (the
// readers take paths), and the one outcome besides success they accept — std::runtime_error.
#pragma once

#include <unistd.h>

#include <fstream>
#include <stdexcept>
#include <string>

namespace fuzz {

// `bytes` as /tmp/ctrax-fuzz-<pid>-<name>; the caller unlinks it.
inline std::string write_temp(const std::string& name, const std::string& bytes) {
  const std::string path = "/tmp/ctrax-fuzz-" + std::to_string(::getpid()) + "-" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// Runs f; a std::runtime_error (a reader refusing its input, naming the file) is a clean outcome,
// anything else — another exception, a crash, a sanitizer report — fails the target.
template <class F>
void expect_clean(F&& f) {
  try {
    f();
  } catch (const std::runtime_error&) {
  }
}

}  // namespace fuzz
