// core/tensor/internal/meta_bytes.hpp — what a run on meta tensors would have allocated.
//
// Not installed (an `internal/` folder). A model larger than the machine's memory does not fail
// with an error: each allocation succeeds (Linux promises pages it does not have) until the pages
// are touched and the kernel kills the process. So sizes are checked before anything is drawn or
// run: Layer::init sizes the weights it would make (core/layer/layer.cpp), the training Loop a
// step's activations (core/train/loop.cpp), Layer::check_call_fits an evaluation's largest tensor —
// the model runs once on meta tensors, and every result it makes is counted: while a MetaBytes
// scope lives on a thread, each meta tensor made there (Tensor::meta, every op's result in a
// shapes-only run) adds its bytes to it.
#pragma once

#include <unistd.h>

#include <fmt/format.h>

#include <fstream>
#include <string>
#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax::internal {

class MetaBytes {
 public:
  MetaBytes() : previous_(current()) { current() = this; }
  ~MetaBytes() { current() = previous_; }
  MetaBytes(const MetaBytes&) = delete;
  MetaBytes& operator=(const MetaBytes&) = delete;
  double bytes() const { return bytes_; }   // all of them
  // The largest one: without gradients a run frees each result once the next layer has read it,
  // so the largest (with the weights) is what a call needs at least.
  double largest_bytes() const { return largest_bytes_; }
  const Tensor& largest() const { return largest_; }   // a meta tensor of its shape and dtype
  // Tensor::meta's: counts a new meta tensor in this thread's innermost scope, if one lives.
  static void add(const Shape& shape, DType dtype, double bytes) {
    MetaBytes* scope = current();
    if (scope == nullptr) return;
    scope->bytes_ += bytes;
    if (bytes > scope->largest_bytes_) {
      scope->largest_bytes_ = bytes;
      current() = nullptr;   // the record is a meta tensor too, not counted
      scope->largest_ = Tensor::meta(shape, dtype);
      current() = scope;
    }
  }

 private:
  static MetaBytes*& current() {
    static thread_local MetaBytes* scope = nullptr;
    return scope;
  }
  double bytes_ = 0, largest_bytes_ = 0;
  Tensor largest_;
  MetaBytes* previous_;
};

// The bytes a tensor of t's shape and dtype holds (or would hold, for a meta tensor).
inline double bytes_of(const Tensor& t) {
  return static_cast<double>(t.numel()) * static_cast<double>(itemsize(t.dtype()));
}
inline double bytes_of(const std::vector<Tensor>& ts) {
  double bytes = 0;
  for (const Tensor& t : ts) bytes += bytes_of(t);
  return bytes;
}
// Bytes as the size checks' messages show them: "137.8 GB".
inline std::string gigabytes(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

// A cgroup's memory limit file as bytes: its text a whole number of bytes (cgroup v1's
// memory.limit_in_bytes, v2's memory.max), else 0 — "max", nothing, or anything else: no limit.
inline double cgroup_limit_bytes(const std::string& text) {
  std::size_t i = 0;
  double bytes = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) bytes = bytes * 10 + (text[i] - '0');
  for (std::size_t j = i; j < text.size(); ++j)
    if (text[j] != '\n' && text[j] != ' ') return 0;
  return i == 0 ? 0 : bytes;
}

// The memory this process may fill, in bytes (0 when the system does not say): the machine's
// physical memory, or its container's cgroup limit where that is lower (a container of 8 GB on a
// host of 64 is killed at 8). The bound both checks hold sizes to.
inline double machine_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGE_SIZE);
  double memory = pages > 0 && page > 0 ? static_cast<double>(pages) * static_cast<double>(page) : 0.0;
  for (const char* file : {"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"}) {
    std::ifstream in(file);
    std::string text;
    if (!in || !std::getline(in, text)) continue;
    const double limit = cgroup_limit_bytes(text);
    if (limit > 0 && (memory == 0 || limit < memory)) memory = limit;
  }
  return memory;
}

}  // namespace ctrax::internal
