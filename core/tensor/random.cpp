#include "core/tensor/random.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <numbers>
#include <stdexcept>

#include "core/tensor/autodiff.hpp"
#include "core/tensor/dispatch.hpp"
#include "core/tensor/profile.hpp"
#include "core/engine/parallel.hpp"

namespace ctrax {

namespace {

std::uint64_t mix(std::uint64_t z) {
  z += 0x9e3779b97f4a7c15ULL;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

// A double in [0, 1) from the top 53 bits.
double unit(std::uint64_t bits) { return static_cast<double>(bits >> 11) * 0x1.0p-53; }

}  // namespace

Rng::Rng(std::uint64_t seed) : key_(mix(seed ^ 0x5eed5eed5eed5eedULL)) {}

std::vector<Rng> Rng::split(int n) const {
  std::vector<Rng> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) out.push_back(fold_in(0x5b1700000000ULL + static_cast<std::uint64_t>(i)));
  return out;
}

Rng Rng::fold_in(std::uint64_t data) const {
  Rng r = *this;
  r.key_ = mix(key_ ^ mix(data + 0x632be59bd9b4e019ULL));
  return r;
}

Rng detail::with_rows(const Rng& rng, std::int64_t first, std::int64_t rows) {
  if (rows < 0 || first < 0)
    throw std::invalid_argument(fmt::format("Rng row window [{}, {} + {}) is not a window", first, first, rows));
  Rng r = rng;
  r.first_row_ = rows == 0 ? 0 : first;
  r.rows_ = rows;
  return r;
}

Rng Rng::without_rows() const { return detail::with_rows(*this, 0, 0); }

std::uint64_t Rng::first_element(std::int64_t n) const {
  if (rows_ == 0) return 0;
  if (n % rows_ != 0)
    throw std::logic_error(fmt::format(
        "a random draw of {} elements is not batch-major over this process's {} rows (rows {}…{} of the "
        "global batch): data-parallel draws must have the batch axis outermost",
        n, rows_, first_row_, first_row_ + rows_ - 1));
  return static_cast<std::uint64_t>(first_row_ * (n / rows_));
}

std::uint64_t Rng::bits(std::uint64_t i) const { return mix(key_ + mix(i)); }

Tensor Rng::uniform(const Shape& shape, double low, double high, DType dtype) const {
  profile::Scope profile_scope(profile::Family::random);
  Tensor t = Tensor::empty(shape, dtype);
  dispatch_float(dtype, [&]<class T>(T) {
    T* p = t.data<T>();
    const std::uint64_t first = first_element(t.numel());
    for (std::int64_t i = 0, n = t.numel(); i < n; ++i)
      p[i] = static_cast<T>(low + (high - low) * unit(bits(first + static_cast<std::uint64_t>(i))));
  }, "Rng::uniform");
  return t;
}

Tensor Rng::normal(const Shape& shape, double mean, double stddev, DType dtype) const {
  profile::Scope profile_scope(profile::Family::random);
  Tensor t = Tensor::empty(shape, dtype);
  dispatch_float(dtype, [&]<class T>(T) {
    T* p = t.data<T>();
    const std::uint64_t first = first_element(t.numel());
    for (std::int64_t i = 0, n = t.numel(); i < n; ++i) {
      // Box-Muller on two independent draws per element (simple, and element i stays a pure
      // function of (key, i)).
      const std::uint64_t g = first + static_cast<std::uint64_t>(i);
      const double u1 = 1.0 - unit(bits(2 * g));
      const double u2 = unit(bits(2 * g + 1));
      const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
      p[i] = static_cast<T>(mean + stddev * z);
    }
  }, "Rng::normal");
  return t;
}

// Each 64-bit draw decides two elements: pair j = i / 2 draws r_j = mix(key + j·γ), γ mix's own
// increment — output j of SplitMix64 started at the key: one hash where bits(j) takes two — and
// element i compares half (i mod 2) of r_j with ⌈p·2³²⌉, so p is resolved to 2⁻³² (a float32
// uniform resolves 2⁻²⁴). Dropout masks are the largest draws of a training step. Element i
// depends on (key, i) alone, so threads and blocks may split the range anywhere.
Rng::BernoulliBlocks Rng::bernoulli_blocks(std::int64_t numel, double p) const {
  const auto threshold = static_cast<std::uint64_t>(std::ceil(std::clamp(p, 0.0, 1.0) * 0x1.0p32));
  return BernoulliBlocks(key_, threshold, static_cast<std::int64_t>(first_element(numel)));
}

void Rng::BernoulliBlocks::draw(std::int64_t begin, std::int64_t end, std::uint8_t* out) const {
  if (end <= begin) return;
  if (threshold_ > 0xffffffffULL) {   // p = 1: every half is below 2³²
    std::fill(out, out + (end - begin), std::uint8_t{1});
    return;
  }
  // Global elements [first, stop) (a row window shifts them), in groups of kPairs pairs aligned
  // on the whole draw: a group's pairs are hashed into `pairs`, then their halves compared in a
  // loop of its own — the compiler vectorises two such loops better than one doing both
  // (docs/11_performance.md). All locals: stores through a byte pointer may alias anything read through `this`.
  constexpr std::int64_t kPairs = 64;
  constexpr std::uint64_t kGamma = 0x9e3779b97f4a7c15ULL;   // mix's increment
  const std::uint64_t key = key_;
  const auto th = static_cast<std::uint32_t>(threshold_);
  const std::int64_t first = first_ + begin, stop = first_ + end;
  alignas(64) std::uint64_t pairs[kPairs];
  std::uint32_t halves[2 * kPairs];   // halves[2q + h]: half h of pairs[q], the low half first
  for (std::int64_t j0 = first / 2 / kPairs * kPairs; 2 * j0 < stop; j0 += kPairs) {
    const std::uint64_t base = key + static_cast<std::uint64_t>(j0) * kGamma;
    for (std::int64_t q = 0; q < kPairs; ++q) pairs[q] = mix(base + static_cast<std::uint64_t>(q) * kGamma);
    for (std::int64_t q = 0; q < kPairs; ++q) {
      halves[2 * q] = static_cast<std::uint32_t>(pairs[q]);
      halves[2 * q + 1] = static_cast<std::uint32_t>(pairs[q] >> 32);
    }
    const std::int64_t e0 = std::max(first, 2 * j0), e1 = std::min(stop, 2 * (j0 + kPairs));
    std::uint8_t* const o = out + (e0 - first);
    if (e1 - e0 == 2 * kPairs) {   // a whole group: a loop of fixed length
      for (std::int64_t e = 0; e < 2 * kPairs; ++e) o[e] = halves[e] < th ? 1 : 0;
    } else {
      const std::uint32_t* const h = halves + (e0 - 2 * j0);
      for (std::int64_t e = 0; e < e1 - e0; ++e) o[e] = h[e] < th ? 1 : 0;
    }
  }
}

Tensor Rng::bernoulli(const Shape& shape, double p) const {
  profile::Scope profile_scope(profile::Family::random);
  Tensor t = Tensor::empty(shape, DType::bool_);
  const BernoulliBlocks blocks = bernoulli_blocks(t.numel(), p);
  std::uint8_t* const d = t.data<std::uint8_t>();
  parallel_chunks(t.numel(), t.numel() > (1 << 16),
                  [&](std::int64_t i0, std::int64_t i1) { blocks.draw(i0, i1, d + i0); });
  return t;
}

Tensor Rng::randint(const Shape& shape, std::int32_t low, std::int32_t high) const {
  if (high <= low) throw std::invalid_argument("randint: empty range");
  Tensor t = Tensor::empty(shape, DType::int32);
  const auto span = static_cast<std::uint64_t>(high - low);
  std::int32_t* d = t.data<std::int32_t>();
  const std::uint64_t first = first_element(t.numel());
  for (std::int64_t i = 0, n = t.numel(); i < n; ++i)
    d[i] = low + static_cast<std::int32_t>(bits(first + static_cast<std::uint64_t>(i)) % span);
  return t;
}

std::vector<std::int64_t> Rng::permutation(std::int64_t n) const {
  std::vector<std::int64_t> p(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) p[i] = i;
  for (std::int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<std::int64_t>(bits(static_cast<std::uint64_t>(i)) %
                                             static_cast<std::uint64_t>(i + 1));
    std::swap(p[i], p[j]);
  }
  return p;
}

}  // namespace ctrax
