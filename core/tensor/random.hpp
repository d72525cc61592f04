// ctrax/core/tensor/random.hpp — a splittable, counter-based random number generator.
//
// JAX's model of randomness, which Trax relies on: an Rng is an immutable 64-bit key. Drawing
// numbers does not change it; element i of a draw is a hash of (key, i). New independent streams
// come from split(n) and fold_in(data). Consequences:
//   - the same seed gives the same weights and the same dropout masks, bit for bit, on every run
//     and at every thread count (no shared generator state to race on);
//   - a layer's draws do not depend on the order in which other layers drew theirs;
//   - a training step's randomness is fold_in(step), so a resumed run replays it exactly.
// The hash is SplitMix64's finaliser (Steele, Lea & Flood 2014), which passes BigCrush when fed a
// counter; bernoulli, the largest draws (dropout's masks), takes SplitMix64's own stream started
// at the key, one hash for two elements (random.cpp).
#pragma once

#include <cstdint>
#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax {

class Rng;
namespace detail {
// The key for rows [first, first + rows) of a global batch (rows 0: no window). Data parallelism's
// seam (dist::DataParallel::part) is its one caller outside tests.
Rng with_rows(const Rng& rng, std::int64_t first, std::int64_t rows);
}  // namespace detail

class Rng {
 public:
  explicit Rng(std::uint64_t seed = 0);
  std::uint64_t key() const { return key_; }

  std::vector<Rng> split(int n) const;          // n independent keys
  Rng fold_in(std::uint64_t data) const;        // a key derived from this one and `data`

  // The i-th raw 64-bit draw of this key.
  std::uint64_t bits(std::uint64_t i) const;
  // Draws (element i depends only on key and i):
  Tensor uniform(const Shape& shape, double low = 0.0, double high = 1.0,
                 DType dtype = DType::float32) const;
  Tensor normal(const Shape& shape, double mean = 0.0, double stddev = 1.0,
                DType dtype = DType::float32) const;
  Tensor bernoulli(const Shape& shape, double p) const;               // bool, true w.p. p
  // bernoulli's decisions a block at a time, for an op that draws them in the pass that uses them
  // (dropout scales each block while its decisions are still in L1):
  //   const auto blocks = rng.bernoulli_blocks(n, p);   // checks the draw as bernoulli({n}, p) does
  //   blocks.draw(begin, end, out);   // out[0 … end − begin) = bernoulli's elements [begin, end)
  // draw never throws, so the threads of a parallel loop may call it on their own blocks.
  class BernoulliBlocks {
   public:
    void draw(std::int64_t begin, std::int64_t end, std::uint8_t* out) const;

   private:
    friend class Rng;
    BernoulliBlocks(std::uint64_t key, std::uint64_t threshold, std::int64_t first)
        : key_(key), threshold_(threshold), first_(first) {}
    std::uint64_t key_, threshold_;
    std::int64_t first_;   // element 0's index in the whole batch's draw (a row window's)
  };
  BernoulliBlocks bernoulli_blocks(std::int64_t numel, double p) const;
  Tensor randint(const Shape& shape, std::int32_t low, std::int32_t high) const;  // [low, high)
  // A permutation of 0..n-1 (Fisher-Yates driven by this key).
  std::vector<std::int64_t> permutation(std::int64_t n) const;

  // DATA PARALLELISM (core/dist/data_parallel.hpp). A process that holds rows [first, first + rows)
  // of a global batch draws what the whole batch's draw gives those rows: its step key carries a
  // row window, and element i of a draw of n elements (batch-major, rows outermost) is element
  // first·(n/rows) + i of the same draw over the whole batch. So K processes drop out exactly the
  // single process's elements. The window is kept by split and fold_in (every layer under the
  // Loop's step key draws so) and set only by dist::DataParallel (detail::with_rows). What an op
  // that draws must know: a draw whose size is not a multiple of rows() is an error, and a draw
  // shared along the batch axis (one decision for every row) takes without_rows(), so every
  // process draws the same.
  Rng without_rows() const;
  std::int64_t rows() const { return rows_; }   // 0: no window (one process)

  bool operator==(const Rng& other) const {
    return key_ == other.key_ && first_row_ == other.first_row_ && rows_ == other.rows_;
  }

 private:
  // The index, in the whole batch's draw, of element 0 of this n-element draw.
  std::uint64_t first_element(std::int64_t n) const;

  friend Rng detail::with_rows(const Rng& rng, std::int64_t first, std::int64_t rows);

  std::uint64_t key_;
  std::int64_t first_row_ = 0, rows_ = 0;   // rows 0: no window
};

}  // namespace ctrax
