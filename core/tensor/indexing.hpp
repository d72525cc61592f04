// ctrax/core/tensor/indexing.hpp — selecting and gathering elements.
//
// where(c, a, b)          c ? a : b, elementwise with broadcasting (c bool). Gradient flows to
//                         a where c holds and to b elsewhere.
// masked_fill(x, m, v)    x where m, else the number v (Trax's attention masking uses v = −1e9:
//                         where(mask, dots, −1e9))
// embedding(table, ids)   table (V, d), ids (...) int32 -> (..., d): row ids[i] of the table.
//                         Gradient: the rows of g added into a zero (V, d) table (scatter-add).
//                         An id outside [0, V) is an error (Trax clips silently).
// one_hot(ids, n)         (...) int32 -> (..., n), 1 at the id, 0 elsewhere. An id outside [0, n)
//                         is an error (jax.nn.one_hot gives a row of zeros).
//
// Decoding state (forward only, no gradient; an x the tape follows is refused: check_forward_only,
// autodiff.hpp): x holds `rows` rows along axis 0, each dim(0)/rows slices long (a KV cache is
// (rows·H, max_len, d_head): a row moves its H heads).
// gather_rows(x, from, rows)  a new tensor of from.size() rows, row r = row from[r] of x.
// move_rows(x, from, n)    row r ← row from[r] in place (rows = from.size()), touching only the
//                          rows that change (from[r] ≠ r) and,
//                          in each, only the first n entries along axis 1 (a KV cache's filled
//                          positions): beam search's reordering costs O(position), not O(max_len).
#pragma once

#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax {

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& keep, double value);
Tensor embedding(const Tensor& table, const Tensor& ids);
Tensor one_hot(const Tensor& ids, std::int64_t n, DType dtype = DType::float32);
Tensor gather_rows(const Tensor& x, const std::vector<std::int64_t>& from, std::int64_t rows);
void move_rows(Tensor& x, const std::vector<std::int64_t>& from, std::int64_t n);

}  // namespace ctrax
