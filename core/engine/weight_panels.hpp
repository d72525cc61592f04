// ctrax/core/engine/weight_panels.hpp — decoding's weights packed once, for one-row products
// (engine room: not installed).
//
// Decoding one token multiplies one row x by every weight matrix W (K × N, row-major): a product
// as fast as W can be read. The team cuts W's columns, so each thread read a part of every row —
// runs of N/2 values, 4N bytes apart — and the prefetchers, which follow runs, fetched past the
// end of each into the other thread's part. In PANELS — W's columns in blocks of 256 bytes (64
// floats, 32 doubles), each block's K rows one after another — a thread reads its panels as one
// run, with the block's sums in registers instead of in memory:
//
//   W, K × N, row-major              its panels, N/64 of K × 64 (floats)
//   row 0:   [ p0 | p1 | p2 | p3 ]   p0: row 0's 64 values, row 1's, …, row K−1's; then p1, …
//   row 1:   [ p0 | p1 | p2 | p3 ]   (the last N mod 64 columns are read from W itself)
//
// While a WeightPanels lives on a thread, each product x·W there of one row (parallel_gemm and
// one_row_products: W not transposed, not rounded to bfloat16), or of 2 to 8 rows where the
// unpacked product would send every block of columns through the few-rows kernel, whose W is one
// of its matrices — the same address and shape — reads W's panels: packed by the team during the
// first such product (each thread packs the panels it then reads) and kept until the scope ends.
// Every column is still summed alone in k order, one std::fma per term, so the numbers are the
// unpacked product's, bit for bit (tests/core/tensor/test_matmul.cpp). The copy costs one more
// pass over the weights, and their size in memory while the scope lives.
//
// The decoders (core/decode) open one for the whole call, over the model's weights, which do not
// change while it decodes (SampleOptions::pack_weights = false: none). No other code sees it: a
// product outside a scope, or of a matrix the scope was not given (an activation, a weight that
// changed address), reads W as before.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <unordered_map>
#include <vector>

namespace ctrax::blas {

class WeightPanels {
 public:
  static constexpr std::int64_t kPanelBytes = 256;

  // A matrix the scope may pack: its first element, its shape (rows K, columns N, row-major and
  // dense) and the size of its elements (4 or 8).
  struct Matrix {
    const void* data = nullptr;
    std::int64_t rows = 0, cols = 0;
    std::size_t element_size = 0;
  };
  // One matrix's panels, allocated when first asked for and filled by that product's team.
  struct Packed {
    Matrix matrix;
    std::unique_ptr<std::byte, void (*)(void*)> panels{nullptr, nullptr};
    bool ready = false;   // every panel filled
  };

  // Makes these matrices packable on this thread until the scope ends (scopes nest: the inner one
  // rules, and the outer one again after it).
  explicit WeightPanels(const std::vector<Matrix>& matrices);
  ~WeightPanels();
  WeightPanels(const WeightPanels&) = delete;
  WeightPanels& operator=(const WeightPanels&) = delete;

  // The panels of the K × N matrix at `data` (elements of element_size bytes) if the scope open on
  // this thread holds it, their memory allocated (not yet filled unless ready); nullptr otherwise,
  // or when the matrix is narrower than one panel.
  static Packed* find(const void* data, std::int64_t rows, std::int64_t cols, std::size_t element_size);

 private:
  std::unordered_map<const void*, Packed> packed_;
  WeightPanels* outer_;
};

}  // namespace ctrax::blas
