// ctrax/core/tensor/ops.hpp — every tensor op in one include, for users and tests.
#pragma once

#include "core/tensor/attention.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/convolution.hpp"
#include "core/tensor/elementwise.hpp"
#include "core/tensor/gather.hpp"
#include "core/tensor/indexing.hpp"
#include "core/tensor/matmul.hpp"
#include "core/tensor/nn_ops.hpp"
#include "core/tensor/precision.hpp"
#include "core/tensor/recurrence.hpp"
#include "core/tensor/dropout.hpp"
#include "core/tensor/random.hpp"
#include "core/tensor/reduce.hpp"
#include "core/tensor/shape_ops.hpp"
#include "core/tensor/tensor.hpp"
