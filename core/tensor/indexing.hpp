// ctrax/core/tensor/indexing.hpp — selecting and gathering elements.
//
// where(c, a, b)          c ? a : b, elementwise with broadcasting (c bool). Gradient flows to
//                         a where c holds and to b elsewhere.
// masked_fill(x, m, v)    x where m, else the number v (Trax's attention masking uses v = −1e9:
//                         where(mask, dots, −1e9))
// embedding(table, ids)   table (V, d), ids (...) int32 -> (..., d): row ids[i] of the table.
//                         Gradient: the rows of g added into a zero (V, d) table (scatter-add).
//                         An id outside [0, V) is an error (Trax clips silently).
// one_hot(ids, n)         (...) int32 -> (..., n), 1 at the id, 0 elsewhere
#pragma once

#include "core/tensor/tensor.hpp"

namespace ctrax {

Tensor where(const Tensor& condition, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& keep, double value);
Tensor embedding(const Tensor& table, const Tensor& ids);
Tensor one_hot(const Tensor& ids, std::int64_t n, DType dtype = DType::float32);

}  // namespace ctrax
