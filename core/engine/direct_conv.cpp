#include "core/engine/direct_conv.hpp"

#include <algorithm>
#include <vector>

#include "core/engine/full_width.hpp"
#include "core/engine/parallel.hpp"

namespace ctrax::direct_conv {

namespace {

// Output channels per tile: 16 (one 512-bit vector of floats), or 32 where C_out allows and
// the registers hold 2 × P accumulators. P output pixels per tile: 8 with AVX-512's 32 vector
// registers, 4 with AVX2's 16.
#if defined(__AVX512F__) || defined(CTRAX_AVX512_KERNELS)
constexpr int kPixels = 8;
constexpr bool kWide = true;
#else
constexpr int kPixels = 4;
constexpr bool kWide = false;
#endif
constexpr std::int64_t kTile = 16;

// One tap's share of a tile: acc[p][n] += Σ_c src[p][c] · w[c·ld + n], for c < C — P broadcasts
// of the input meet one row of the kernel per channel c.
template <class T, int P, int NB>
CTRAX_FULL_WIDTH_VECTORS __attribute__((always_inline)) inline void add_tap(T (&acc)[P][NB], const T* const (&src)[P],
                                                                         const T* w, std::int64_t C, std::int64_t ld) {
  for (std::int64_t c = 0; c < C; ++c) {
    const T* wr = w + c * ld;
    for (int p = 0; p < P; ++p) {
      const T a = src[p][c];
#pragma omp simd
      for (int n = 0; n < NB; ++n) acc[p][n] += a * wr[n];
    }
  }
}

// One tile: output row (b, oy), pixels ox0 … ox0 + np − 1 (np ≤ P), channels co0 … co0 + NB − 1.
template <class T, int P, int NB>
CTRAX_FULL_WIDTH_VECTORS void forward_tile(const Geometry& g, const T* x, const T* w, const T* bias, T* y,
                                           std::int64_t b, std::int64_t oy, std::int64_t ox0, int np,
                                           std::int64_t co0, const T* zeros) {
  T acc[P][NB];
  for (int p = 0; p < P; ++p)
    for (int n = 0; n < NB; ++n) acc[p][n] = bias ? bias[co0 + n] : T(0);
  const std::int64_t C = g.C_in;
  for (std::int64_t i = 0; i < g.kh; ++i) {
    const std::int64_t iy = oy * g.stride_h + i - g.pad_top;
    const bool row_inside = iy >= 0 && iy < g.H;
    for (std::int64_t j = 0; j < g.kw; ++j) {
      const T* src[P];
      for (int p = 0; p < P; ++p) {
        const std::int64_t ix = (ox0 + p) * g.stride_w + j - g.pad_left;
        src[p] = row_inside && p < np && ix >= 0 && ix < g.W ? x + ((b * g.H + iy) * g.W + ix) * C : zeros;
      }
      add_tap<T, P, NB>(acc, src, w + (i * g.kw + j) * C * g.C_out + co0, C, g.C_out);
    }
  }
  T* out = y + ((b * g.OH + oy) * g.OW + ox0) * g.C_out + co0;
  for (int p = 0; p < np; ++p)
    for (int n = 0; n < NB; ++n) out[p * g.C_out + n] = acc[p][n];
}

// CB input channels (ci0 …) × NB output channels (co0 …) of tap (i, j), summed over output rows
// r0 … r1 − 1 (row r is image b = r / OH, output row oy = r % OH) in registers, then added into dw
// (kh, kw, C_in, C_out): the accumulators stay in registers across the rows, so their write-back
// is paid once per block of rows, not once per row (a 7-pixel row is 7 steps of arithmetic).
template <class T, int CB, int NB>
CTRAX_FULL_WIDTH_VECTORS void weight_rows(const Geometry& g, const T* x, const T* dy, T* dw, std::int64_t r0,
                                          std::int64_t r1, std::int64_t i, std::int64_t j, std::int64_t ci0,
                                          std::int64_t co0) {
  // The output columns whose input column ox·sw + j − pl lies inside the image: first ≤ ox·sw ≤ last.
  const std::int64_t sw = g.stride_w, first = g.pad_left - j, last = g.W - 1 + g.pad_left - j;
  if (last < 0) return;
  const std::int64_t ox_begin = first <= 0 ? 0 : (first + sw - 1) / sw;
  const std::int64_t ox_end = std::min<std::int64_t>(g.OW, last / sw + 1);
  T acc[CB][NB] = {};
  for (std::int64_t r = r0; r < r1; ++r) {
    const std::int64_t b = r / g.OH, oy = r % g.OH;
    const std::int64_t iy = oy * g.stride_h + i - g.pad_top;
    if (iy < 0 || iy >= g.H) continue;
    const T* xrow = x + ((b * g.H + iy) * g.W) * g.C_in + ci0;
    const T* drow = dy + ((b * g.OH + oy) * g.OW) * g.C_out + co0;
    for (std::int64_t ox = ox_begin; ox < ox_end; ++ox) {
      const T* xs = xrow + (ox * sw + j - g.pad_left) * g.C_in;
      const T* d = drow + ox * g.C_out;
      for (int c = 0; c < CB; ++c) {
        const T a = xs[c];
#pragma omp simd
        for (int n = 0; n < NB; ++n) acc[c][n] += a * d[n];
      }
    }
  }
  T* out = dw + ((i * g.kw + j) * g.C_in + ci0) * g.C_out + co0;
  for (int c = 0; c < CB; ++c)
    for (int n = 0; n < NB; ++n) out[c * g.C_out + n] += acc[c][n];
}

// sums[c] += Σ_p dy[p, c] over n pixels of C_out channels (a multiple of 16): 16 channels at a time,
// their sums in registers across the pixels (a sum kept in memory would wait on its own store
// every pixel).
template <class T>
CTRAX_FULL_WIDTH_VECTORS void add_bias_sums(const T* dy, std::int64_t n, std::int64_t C_out, T* sums) {
  for (std::int64_t co = 0; co < C_out; co += kTile) {
    T acc[kTile] = {};
    for (std::int64_t p = 0; p < n; ++p)
#pragma omp simd
      for (int c = 0; c < kTile; ++c) acc[c] += dy[p * C_out + co + c];
    for (int c = 0; c < kTile; ++c) sums[co + c] += acc[c];
  }
}

template <class T, int NB>
void weight_rows_all(const Geometry& g, const T* x, const T* dy, T* dw, std::int64_t r0, std::int64_t r1,
                     std::int64_t co0) {
  for (std::int64_t i = 0; i < g.kh; ++i)
    for (std::int64_t j = 0; j < g.kw; ++j) {
      std::int64_t ci = 0;
      if constexpr (NB == 16 && kWide)   // 16 × 16 accumulators: every step 17 loads for 16 multiply-adds
        for (; ci + 16 <= g.C_in; ci += 16) weight_rows<T, 16, NB>(g, x, dy, dw, r0, r1, i, j, ci, co0);
      for (; ci + 8 <= g.C_in; ci += 8) weight_rows<T, 8, NB>(g, x, dy, dw, r0, r1, i, j, ci, co0);
      for (; ci + 4 <= g.C_in; ci += 4) weight_rows<T, 4, NB>(g, x, dy, dw, r0, r1, i, j, ci, co0);
      for (; ci < g.C_in; ++ci) weight_rows<T, 1, NB>(g, x, dy, dw, r0, r1, i, j, ci, co0);
    }
}

// THE STRIP. forward_tile above finds each pixel's input for each tap on its own (inside the image
// or the row of zeros): P pointers live through the channel loop, which caps P at 8 and costs a
// set-up per tap that a 16-channel tap (16 steps of arithmetic) feels. For C_in a multiple of 16
// each input row is first copied into a small buffer, padded with zeros and blocked by 16
// channels: row[cb][col][16] = x̃[b, iy, col − pl, cb·16 …]. In it pixel p of a tile lies a
// constant 16·sw floats after pixel p − 1, for every tap and channel: one pointer per tap, every
// offset known to the compiler, so the tile can hold 16 pixels of a 16-channel output. An output
// row reads kh such rows; they are kept in a ring of kh slots (input row iy in slot iy mod kh), so
// the next output row copies only the sh rows it does not share: each input row is copied about
// once, Wp·C_in floats against OW·kh·kw·C_in·C_out multiply-adds. Tap rows outside the image are
// skipped, not summed. The columns run to the last tile's last pixel (a tile past OW computes
// pixels it does not store).
constexpr std::int64_t kBlock = 16;

// Input row iy of image b into row (C_in / 16 blocks of Wp × 16).
template <class T>
void fill_row(const Geometry& g, const T* x, std::int64_t b, std::int64_t iy, std::int64_t Wp, T* row) {
  const std::int64_t CB = g.C_in / kBlock;
  // columns col with ix = col − pl inside the image: lo ≤ col < hi; zeros around them
  const std::int64_t lo = std::clamp<std::int64_t>(g.pad_left, 0, Wp), hi = std::clamp(g.W + g.pad_left, lo, Wp);
  const T* src = x + ((b * g.H + iy) * g.W + (lo - g.pad_left)) * g.C_in;
  for (std::int64_t cb = 0; cb < CB; ++cb) {
    T* dst = row + cb * Wp * kBlock;
    std::fill(dst, dst + lo * kBlock, T(0));
    for (std::int64_t col = lo; col < hi; ++col)
      for (std::int64_t c = 0; c < kBlock; ++c) dst[col * kBlock + c] = src[(col - lo) * g.C_in + cb * kBlock + c];
    std::fill(dst + hi * kBlock, dst + Wp * kBlock, T(0));
  }
}

// One tile of the strip, for the forward pass and the strided input gradient alike: P pixels × NB
// output channels in registers, started from bias (or zero). Tap t reads pixel p's channels at
// src[t] + p·Step (blocks of Block channels, `block` floats apart) and its kernel rows at w[t] (one
// row of ld floats per channel, NB of them used); pixel p of the np < P stored goes to
// out + p·pixel. The sums run over the taps in order, then the channels in order.
template <class T, int P, int NB, int Step, int Block>
CTRAX_FULL_WIDTH_VECTORS void strip_tile(const T* const* src, const T* const* w, int n_taps, std::int64_t CB,
                                         std::int64_t block, std::int64_t ld, const T* bias, T* out,
                                         std::int64_t pixel, int np) {
  T acc[P][NB];
  for (int p = 0; p < P; ++p)
    for (int n = 0; n < NB; ++n) acc[p][n] = bias ? bias[n] : T(0);
  for (int t = 0; t < n_taps; ++t) {
    const T* s = src[t];
    const T* wr = w[t];
    for (std::int64_t cb = 0; cb < CB; ++cb, s += block)
      for (int c = 0; c < Block; ++c, wr += ld)
        for (int p = 0; p < P; ++p) {
          const T a = s[p * Step + c];
#pragma omp simd
          for (int n = 0; n < NB; ++n) acc[p][n] += a * wr[n];
        }
  }
  for (int p = 0; p < np; ++p)
    for (int n = 0; n < NB; ++n) out[p * pixel + n] = acc[p][n];
}

// Pixels per strip tile for NB output channels: as many as the accumulator registers hold
// (P·NB/lanes of them: 16 of AVX-512's 32, 12 of AVX2's 16, leaving room for the kernel's row and
// a broadcast), or for short rows as many as 8 accumulators hold (still enough independent sums
// to keep both multiply-add units busy).
template <class T, int NB>
constexpr int strip_pixels(bool short_row) {
#if defined(__AVX512F__) || defined(CTRAX_AVX512_KERNELS)
  constexpr int lanes = 64 / sizeof(T), registers = 16;
#else
  constexpr int lanes = 32 / sizeof(T), registers = 12;
#endif
  return std::max(1, (short_row ? 8 : registers) * lanes / NB);
}

// Every output row through the strip: fill(b, iy, Wp, row) copies input row iy of image b.
template <class T, int P, int NB, int SW, int Block, class Fill>
void strip_rows(const Geometry& g, const Fill& fill, const T* w, const T* bias, T* y) {
  const std::int64_t tiles = (g.OW + P - 1) / P, Wp = (tiles * P - 1) * SW + g.kw;
  const std::int64_t rows = g.B * g.OH;
  const std::int64_t work = rows * g.OW * g.C_out * g.kh * g.kw * g.C_in;
  parallel_chunks(rows, work >= (1 << 18), [&](std::int64_t r0, std::int64_t r1) {
    const std::int64_t row_size = g.C_in * Wp;
    std::vector<T> ring(static_cast<std::size_t>(g.kh * row_size));
    std::vector<std::int64_t> held(static_cast<std::size_t>(g.kh), -1);   // b·H + iy of each slot
    // per tap (i, j) inside the image: where its pixels and its kernel rows start (base, wbase),
    // and for the tile at hand (src, w)
    const auto taps = static_cast<std::size_t>(g.kh * g.kw);
    std::vector<const T*> base(taps), wbase(taps), src(taps), wt(taps);
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t b = r / g.OH, oy = r % g.OH;
      const std::int64_t top = oy * g.stride_h - g.pad_top;   // the input row of tap row 0
      const std::int64_t i0 = std::max<std::int64_t>(0, -top), i1 = std::min(g.kh, g.H - top);
      int n_taps = 0;
      for (std::int64_t i = i0; i < i1; ++i) {
        const std::int64_t iy = top + i, slot = iy % g.kh;
        T* row = ring.data() + slot * row_size;
        if (held[slot] != b * g.H + iy) {
          fill(b, iy, Wp, row);
          held[slot] = b * g.H + iy;
        }
        for (std::int64_t j = 0; j < g.kw; ++j, ++n_taps) {
          base[n_taps] = row + j * Block;
          wbase[n_taps] = w + (i * g.kw + j) * g.C_in * g.C_out;
        }
      }
      T* out = y + r * g.OW * g.C_out;
      for (std::int64_t co = 0; co < g.C_out; co += NB)
        for (std::int64_t t = 0; t < tiles; ++t) {
          for (int k = 0; k < n_taps; ++k) {
            src[k] = base[k] + t * P * SW * Block;
            wt[k] = wbase[k] + co;
          }
          const int np = static_cast<int>(std::min<std::int64_t>(P, g.OW - t * P));
          strip_tile<T, P, NB, SW * Block, Block>(src.data(), wt.data(), n_taps, g.C_in / Block, Wp * Block, g.C_out,
                                                  bias ? bias + co : nullptr, out + t * P * g.C_out + co, g.C_out, np);
        }
    }
  });
}

// The strip's tile for this layer: 32 output channels where AVX-512 has the registers for them;
// of the two pixel counts the one that computes a row for less: each tile of P pixels costs them
// and about two pixels' worth more (its sums' start and store, and with few pixels the kernel's row
// read per step weighs more), and a tile past the row's end computes pixels it does not store.
template <class T, int SW, int Block, class Fill>
void strip_forward(const Geometry& g, const Fill& fill, const T* w, const T* bias, T* y) {
  const auto smaller_is_cheaper = [&](int full, int half) {
    const auto cost = [&](int p) { return (g.OW + p - 1) / p * (p + 2); };
    return cost(half) < cost(full);
  };
  if (kWide && g.C_out % 32 == 0) {
    constexpr int full = strip_pixels<T, 32>(false), half = strip_pixels<T, 32>(true);
    if (smaller_is_cheaper(full, half)) strip_rows<T, half, 32, SW, Block>(g, fill, w, bias, y);
    else strip_rows<T, full, 32, SW, Block>(g, fill, w, bias, y);
  } else {
    constexpr int full = strip_pixels<T, 16>(false), half = strip_pixels<T, 16>(true);
    if (smaller_is_cheaper(full, half)) strip_rows<T, half, 16, SW, Block>(g, fill, w, bias, y);
    else strip_rows<T, full, 16, SW, Block>(g, fill, w, bias, y);
  }
}

// THE STEM: a grey image's first layer has one input channel, and forward_tile spends each tap's
// pointer set-up on a single multiply-add per pixel. Where a tap row's kw·C_in inputs fit in a
// block of 4, the strip holds for each output column those inputs side by side, zero-padded:
// row[ox][j·C_in + c] = x̃[b, iy, ox·sw + j − pl, c]. That is a convolution of kw = 1, stride 1 and
// C_in = 4 over the strip, with the kernel's rows laid out the same way, (kh, 1, 4, C_out), zero
// past kw·C_in: the same tile computes it, and the sums run in the same order. (An RGB image's
// 3 × 3 taps, 9 inputs, padded to a block of 16 ran slower than forward_tile, measured: not taken.)
constexpr int kPatch = 4;

template <class T, int Block>
void patch_forward(const Geometry& g, const T* x, const T* w, const T* bias, T* y) {
  const std::int64_t K = g.kw * g.C_in;
  std::vector<T> wp(static_cast<std::size_t>(g.kh * Block * g.C_out), T(0));
  for (std::int64_t i = 0; i < g.kh; ++i) std::copy_n(w + i * K * g.C_out, K * g.C_out, wp.data() + i * Block * g.C_out);
  Geometry pg = g;
  pg.C_in = Block;
  pg.kw = 1;
  pg.stride_w = 1;
  pg.pad_left = 0;
  const auto fill = [&](std::int64_t b, std::int64_t iy, std::int64_t Wp, T* row) {
    const T* src = x + (b * g.H + iy) * g.W * g.C_in;
    for (std::int64_t ox = 0; ox < Wp; ++ox) {
      T* dst = row + ox * Block;
      for (std::int64_t j = 0; j < g.kw; ++j) {
        const std::int64_t ix = ox * g.stride_w + j - g.pad_left;
        const bool inside = ix >= 0 && ix < g.W;
        for (std::int64_t c = 0; c < g.C_in; ++c) dst[j * g.C_in + c] = inside ? src[ix * g.C_in + c] : T(0);
      }
      std::fill(dst + K, dst + Block, T(0));
    }
  };
  strip_forward<T, 1, Block>(pg, fill, wp.data(), bias, y);
}

}  // namespace

bool applies(std::int64_t c_out) { return c_out > 0 && c_out % kTile == 0; }

template <class T>
void forward(const Geometry& g, const T* x, const T* w, const T* bias, T* y) {
  if (g.C_in % kBlock == 0 && (g.stride_w == 1 || g.stride_w == 2)) {
    const auto fill = [&](std::int64_t b, std::int64_t iy, std::int64_t Wp, T* row) { fill_row(g, x, b, iy, Wp, row); };
    if (g.stride_w == 1) strip_forward<T, 1, kBlock>(g, fill, w, bias, y);
    else strip_forward<T, 2, kBlock>(g, fill, w, bias, y);
    return;
  }
  if (g.kw * g.C_in <= kPatch) return patch_forward<T, kPatch>(g, x, w, bias, y);
  const std::vector<T> zeros(static_cast<std::size_t>(g.C_in), T(0));
  const bool wide = kWide && g.C_out % 32 == 0;
  const std::int64_t rows = g.B * g.OH;
  const std::int64_t work = rows * g.OW * g.C_out * g.kh * g.kw * g.C_in;
  parallel_chunks(rows, work >= (1 << 18), [&](std::int64_t r0, std::int64_t r1) {
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t b = r / g.OH, oy = r % g.OH;
      for (std::int64_t co = 0; co < g.C_out; co += wide ? 32 : 16)
        for (std::int64_t ox = 0; ox < g.OW; ox += kPixels) {
          const int np = static_cast<int>(std::min<std::int64_t>(kPixels, g.OW - ox));
          if (wide) forward_tile<T, kPixels, 32>(g, x, w, bias, y, b, oy, ox, np, co, zeros.data());
          else forward_tile<T, kPixels, 16>(g, x, w, bias, y, b, oy, ox, np, co, zeros.data());
        }
    }
  });
}

template <class T>
void weight_grad(const Geometry& g, const T* x, const T* dy, T* dw, T* db) {
  // n sums of dw, then (with db) C_out sums of dy — the bias's gradient, taken while dy's rows are in cache
  const std::int64_t rows = g.B * g.OH, n_dw = g.kh * g.kw * g.C_in * g.C_out, n = n_dw + (db ? g.C_out : 0);
  const std::int64_t work = rows * g.OW * n;
  const std::int64_t parts = work >= (1 << 18) ? fixed_parts(rows, 8) : 1;
  std::vector<T> partial(static_cast<std::size_t>(parts * n), T(0));
  const bool wide = kWide && g.C_out % 32 == 0;
  // Each part walks its rows in blocks whose input and output rows fit in the core's L1 cache
  // (32 KB), every tap and channel block sweeping a block while it is there.
  const std::int64_t row_bytes = (g.stride_h * g.W * g.C_in + g.OW * g.C_out) * static_cast<std::int64_t>(sizeof(T));
  const std::int64_t block = std::max<std::int64_t>(1, (32 << 10) / row_bytes);
  parallel_parts(parts, [&](std::int64_t p) {
    T* mine = partial.data() + p * n;
    const std::int64_t end = rows * (p + 1) / parts;
    for (std::int64_t r0 = rows * p / parts; r0 < end; r0 += block) {
      const std::int64_t r1 = std::min(end, r0 + block);
      for (std::int64_t co = 0; co < g.C_out; co += wide ? 32 : 16) {
        if (wide) weight_rows_all<T, 32>(g, x, dy, mine, r0, r1, co);
        else weight_rows_all<T, 16>(g, x, dy, mine, r0, r1, co);
      }
      if (db) add_bias_sums(dy + r0 * g.OW * g.C_out, (r1 - r0) * g.OW, g.C_out, mine + n_dw);
    }
  });
  std::fill_n(dw, n_dw, T(0));
  if (db) std::fill_n(db, g.C_out, T(0));
  for (std::int64_t p = 0; p < parts; ++p)
    for (std::int64_t k = 0; k < n; ++k) (k < n_dw ? dw[k] : db[k - n_dw]) += partial[static_cast<std::size_t>(p * n + k)];
}

// THE INPUT GRADIENT AT A STRIDE, through a strip of dy's rows (copied as the forward copies its
// input: blocked by 16 channels, zero columns around, a ring of kh rows). Input row iy takes, for
// each phase rx (pixels ix = rx + sw·k), the taps i, j whose offsets land on it: output row
// oy = (iy + pt − i)/sh, and pixel k reads output column (rx + pl − j)/sw + k — consecutive
// columns of the copied row, at fixed offsets. Each pixel is one thread's sum, over its taps in
// (i, j) order and over the output channels in order.
template <class T, int P, int NB>
void strip_input_grad(const Geometry& g, const T* dy, const T* wt, T* dx) {
  const std::int64_t sh = g.stride_h, sw = g.stride_w, CB = g.C_out / kBlock;
  // dy's row as the strip holds it: column ox + lead, for ox from −lead (a phase's first pixel
  // under the last tap) to past any tile's last pixel
  const std::int64_t lead = (g.kw + sw - 1) / sw;
  const std::int64_t Wd = lead + std::max(g.OW, (g.W + g.pad_left) / sw + 2 * P + 1);
  const Geometry dy_rows{g.B, g.OH, g.OW, g.C_out, 1, 1, g.C_out, g.OH, g.OW, 0, lead};
  const std::int64_t rows = g.B * g.H, row_size = g.C_out * Wd, block = Wd * kBlock;
  const std::int64_t work = rows * g.W * g.C_in * g.kh * g.kw * g.C_out / (sh * sw);
  parallel_chunks(rows, work >= (1 << 18), [&](std::int64_t r0, std::int64_t r1) {
    std::vector<T> ring(static_cast<std::size_t>(g.kh * row_size));
    std::vector<std::int64_t> held(static_cast<std::size_t>(g.kh), -1);   // b·OH + oy of each slot
    // per tap: where its pixels and its kernel rows start (base, wbase), and for the tile at hand (src, w)
    std::vector<const T*> base(static_cast<std::size_t>(g.kh * g.kw)), wbase(base.size()), src(base.size()), w(base.size());
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::int64_t b = r / g.H, iy = r % g.H;
      for (std::int64_t rx = 0; rx < std::min(sw, g.W); ++rx) {
        int n_taps = 0;
        for (std::int64_t i = 0; i < g.kh; ++i) {
          const std::int64_t ry = iy + g.pad_top - i;   // = oy·sh
          if (ry < 0 || ry % sh != 0 || ry / sh >= g.OH) continue;
          const std::int64_t oy = ry / sh, slot = oy % g.kh;
          T* row = ring.data() + slot * row_size;
          if (held[slot] != b * g.OH + oy) {
            fill_row(dy_rows, dy, b, oy, Wd, row);
            held[slot] = b * g.OH + oy;
          }
          for (std::int64_t j = 0; j < g.kw; ++j) {
            const std::int64_t rc = rx + g.pad_left - j;   // = ox·sw for the phase's first pixel
            if (((rc % sw) + sw) % sw != 0) continue;
            base[n_taps] = row + (rc / sw + lead) * kBlock;
            wbase[n_taps] = wt + (i * g.kw + j) * g.C_out * g.C_in;
            ++n_taps;
          }
        }
        const std::int64_t n_phase = (g.W - rx + sw - 1) / sw;   // pixels rx, rx + sw, …
        T* out = dx + ((b * g.H + iy) * g.W + rx) * g.C_in;
        for (std::int64_t ci = 0; ci < g.C_in; ci += NB)
          for (std::int64_t k = 0; k < n_phase; k += P) {
            for (int t = 0; t < n_taps; ++t) {
              src[t] = base[t] + k * kBlock;
              w[t] = wbase[t] + ci;
            }
            const int np = static_cast<int>(std::min<std::int64_t>(P, n_phase - k));
            strip_tile<T, P, NB, kBlock, kBlock>(src.data(), w.data(), n_taps, CB, block, g.C_in, nullptr,
                                                 out + k * sw * g.C_in + ci, sw * g.C_in, np);
          }
      }
    }
  });
}

template <class T>
void input_grad(const Geometry& g, const T* dy, const T* wt, T* dx) {
  const std::int64_t n_phase = (g.W + g.stride_w - 1) / g.stride_w;   // a phase's pixels (at most)
  const auto short_is_cheaper = [&](int full, int half) {
    const auto cost = [&](int p) { return (n_phase + p - 1) / p * (p + 2); };
    return cost(half) < cost(full);
  };
  if (kWide && g.C_in % 32 == 0) {
    constexpr int full = strip_pixels<T, 32>(false), half = strip_pixels<T, 32>(true);
    if (short_is_cheaper(full, half)) strip_input_grad<T, half, 32>(g, dy, wt, dx);
    else strip_input_grad<T, full, 32>(g, dy, wt, dx);
  } else {
    constexpr int full = strip_pixels<T, 16>(false), half = strip_pixels<T, 16>(true);
    if (short_is_cheaper(full, half)) strip_input_grad<T, half, 16>(g, dy, wt, dx);
    else strip_input_grad<T, full, 16>(g, dy, wt, dx);
  }
}

template void forward<float>(const Geometry&, const float*, const float*, const float*, float*);
template void forward<double>(const Geometry&, const double*, const double*, const double*, double*);
template void weight_grad<float>(const Geometry&, const float*, const float*, float*, float*);
template void weight_grad<double>(const Geometry&, const double*, const double*, double*, double*);
template void input_grad<float>(const Geometry&, const float*, const float*, float*);
template void input_grad<double>(const Geometry&, const double*, const double*, double*);

}  // namespace ctrax::direct_conv
