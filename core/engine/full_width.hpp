// ctrax/core/engine/full_width.hpp — internal: full-width vectors for the few loops that need them.
//
// g++ 12 prefers 256-bit vectors under -march=native even on CPUs with AVX-512 (wider ones once
// lowered the clock of older Intel parts). Most loops here do not care (the dropout mask's hashing,
// tried, ran no faster); one does, measured: the few-rows product kernel (gemm.cpp), whose 8 rows
// × 2 accumulators take 32 registers at 256 bits and spill to the stack every step of k; at 512
// bits they fit in 16 (docs/11_performance.md measures the difference).
// CTRAX_FULL_WIDTH_VECTORS before such a function asks for 512-bit vectors in it alone. On CPUs
// without AVX-512 it is empty.
//
// Where the compiler builds some AVX-512 vector constants wrong (g++ 12.2: the probe
// scripts/probe_vector_constants.cpp, run by meson.build) and keeping constants out of general
// registers does not cure it, AVX-512 is off for the whole build and meson defines
// CTRAX_AVX512_KERNELS: these functions alone turn it back on. They hold no such constant (their
// vectors start at zero), and their tests compare them with a plain loop.
#pragma once

#if defined(__AVX512F__)
#define CTRAX_FULL_WIDTH_VECTORS __attribute__((target("prefer-vector-width=512")))
#elif defined(CTRAX_AVX512_KERNELS)
#define CTRAX_FULL_WIDTH_VECTORS \
  __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx512cd,prefer-vector-width=512")))
#else
#define CTRAX_FULL_WIDTH_VECTORS
#endif
