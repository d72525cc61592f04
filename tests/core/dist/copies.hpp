// Stands in for K processes that all hold the same values: a sum multiplies every element by K.
// Counts the calls, to see the buckets; `rank` says which process this one plays, `local` how many
// of them share its machine.
#pragma once

#include <cstdint>
#include <string>

#include "core/dist/communicator.hpp"

namespace ctrax::testing {

class Copies final : public dist::Communicator {
 public:
  explicit Copies(int k, int rank = 0, int local = 1) : k_(k), rank_(rank), local_(local) {}
  int size() const override { return k_; }
  int local_size() const override { return local_; }
  int rank() const override { return rank_; }
  std::string describe() const override { return "copies"; }
  void barrier() override {}
  // A started sum is done at once here; `in_flight` counts the ones wait_all has not yet seen.
  void start_sum(void* data, std::size_t n, DType dtype) override {
    all_reduce_sum(data, n, dtype);
    ++started;
    ++in_flight;
  }
  void wait_all() override { in_flight = 0; }
  void abort(int status) override { aborted = status; }   // recorded; the caller's error goes on
  int calls = 0, started = 0, in_flight = 0, aborted = -1;

 protected:
  void all_reduce_sum(void* data, std::size_t n, DType dtype) override {
    ++calls;
    for (std::size_t i = 0; i < n; ++i) {
      if (dtype == DType::float32) static_cast<float*>(data)[i] *= static_cast<float>(k_);
      if (dtype == DType::float64) static_cast<double*>(data)[i] *= k_;
      if (dtype == DType::int32) static_cast<std::int32_t*>(data)[i] *= k_;
    }
  }
  void broadcast_bytes(void*, std::size_t, int) override {}

 private:
  int k_, rank_, local_;
};

}  // namespace ctrax::testing
