// ctrax/core/layer/combinators.hpp — the whole composition algebra in one include.
#pragma once

#include "core/layer/batch_leading_axes.hpp"
#include "core/layer/bidirectional.hpp"
#include "core/layer/branch.hpp"
#include "core/layer/cache.hpp"
#include "core/layer/chunk.hpp"
#include "core/layer/cond.hpp"
#include "core/layer/fn.hpp"
#include "core/layer/layer.hpp"
#include "core/layer/parallel.hpp"
#include "core/layer/residual.hpp"
#include "core/layer/scan.hpp"
#include "core/layer/select.hpp"
#include "core/layer/serial.hpp"
#include "core/layer/stack_ops.hpp"
