#include "core/tensor/tensor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <new>
#include <ostream>
#include <stdexcept>
#include <utility>

#include "core/engine/block_cache.hpp"
#include "core/tensor/internal/meta_bytes.hpp"
#include "core/tensor/internal/tensor_bytes.hpp"
#include "core/tensor/op.hpp"

namespace ctrax {

namespace detail {

void throw_undefined_tensor() { throw std::logic_error("use of an undefined Tensor"); }
void throw_no_data(const Tensor& t) { throw std::logic_error("a meta tensor " + t.signature() + " has no data"); }
void throw_wrong_dtype(DType asked, DType held) {
  throw std::invalid_argument(fmt::format("data<{}>() on a {} tensor", to_string(asked), to_string(held)));
}

}  // namespace detail

namespace {

// std::bad_alloc that says what could not be allocated (callers that catch bad_alloc still do).
class OutOfMemory : public std::bad_alloc {
 public:
  explicit OutOfMemory(std::string what) : what_(std::move(what)) {}
  const char* what() const noexcept override { return what_.c_str(); }

 private:
  std::string what_;
};

// The byte size of a tensor, after checking its shape: extents >= 0, size within 63 bits.
std::size_t checked_bytes(const Shape& shape, DType dtype) {
  std::int64_t bytes = static_cast<std::int64_t>(itemsize(dtype));
  for (auto d : shape)
    if (d < 0) throw std::invalid_argument("negative extent in shape " + to_string(shape));
  for (auto d : shape)
    if (__builtin_mul_overflow(bytes, d, &bytes))
      throw std::length_error(fmt::format("a {} {} tensor is too large: its size overflows 64 bits",
                                          to_string(dtype), to_string(shape)));
  return static_cast<std::size_t>(bytes);
}

// The allocator of a tensor's small shared objects (its TensorImpl with the reference counts,
// its memory's reference count): block_cache's per-thread small blocks, not glibc's bins.
template <class T>
struct Recycling {
  using value_type = T;
  Recycling() = default;
  template <class U>
  Recycling(const Recycling<U>&) {}   // NOLINT: rebinding, as std::allocate_shared does
  T* allocate(std::size_t n) { return static_cast<T*>(block_cache::acquire_small(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) { block_cache::release_small(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const Recycling<U>&) const { return true; }
};
static_assert(alignof(TensorImpl) <= __STDCPP_DEFAULT_NEW_ALIGNMENT__);

std::shared_ptr<TensorImpl> new_impl() { return std::allocate_shared<TensorImpl>(Recycling<TensorImpl>{}); }
std::shared_ptr<TensorImpl> new_impl(const TensorImpl& from) {
  return std::allocate_shared<TensorImpl>(Recycling<TensorImpl>{}, from);
}

// The bytes all tensors hold, the most they held while a TensorPeak watches, and how many watch
// (internal/tensor_bytes.hpp).
std::atomic<std::int64_t> g_live_bytes{0}, g_peak_bytes{0};
std::atomic<int> g_peak_watchers{0};

// What frees a tensor's memory. It lives in the memory's shared_ptr control block, one per block,
// which every handle and view of the block shares: the block's count of changes in place sits
// beside it (Tensor::changed_in_place), so a write through any alias is seen, as PyTorch's
// version counter lives with the storage.
struct Block {
  std::size_t rounded;
  std::int64_t counted;
  std::uint64_t changes = 0;
  void operator()(std::byte* q) const {
    g_live_bytes.fetch_sub(counted, std::memory_order_relaxed);
    block_cache::release(q, rounded);
  }
};

// 64-byte aligned blocks: whole cache lines, and AVX-512 loads never straddle them.
std::shared_ptr<std::byte> allocate(const Shape& shape, DType dtype) {
  const std::size_t bytes = checked_bytes(shape, dtype);
  const std::size_t rounded = bytes == 0 ? 64 : ((bytes + 63) / 64) * 64;
  void* p = block_cache::acquire(rounded);   // a block this thread freed, when one fits
  if (!p)
    throw OutOfMemory(fmt::format("out of memory: cannot allocate {:.3g} GB for a {} {} tensor",
                                  static_cast<double>(bytes) / 1e9, to_string(dtype), to_string(shape)));
  const auto counted = static_cast<std::int64_t>(rounded);
  const std::int64_t live = g_live_bytes.fetch_add(counted, std::memory_order_relaxed) + counted;
  if (g_peak_watchers.load(std::memory_order_relaxed) > 0) {
    std::int64_t peak = g_peak_bytes.load(std::memory_order_relaxed);
    while (live > peak && !g_peak_bytes.compare_exchange_weak(peak, live, std::memory_order_relaxed)) {
    }
  }
  return {static_cast<std::byte*>(p), Block{rounded, counted}, Recycling<std::byte>{}};
}

// The block's changes in place, shared by every handle and view of it; 0 for a meta tensor.
std::uint64_t* changes_of(const std::shared_ptr<std::byte>& storage) {
  Block* block = std::get_deleter<Block>(storage);
  return block ? &block->changes : nullptr;
}

}  // namespace

namespace internal {

std::int64_t live_tensor_bytes() { return g_live_bytes.load(std::memory_order_relaxed); }

TensorPeak::TensorPeak() : start_(live_tensor_bytes()) {
  // The first watcher starts the peak afresh; a later one shares the running peak (≥ start_).
  if (g_peak_watchers.fetch_add(1, std::memory_order_relaxed) == 0) g_peak_bytes.store(start_, std::memory_order_relaxed);
}
TensorPeak::~TensorPeak() { g_peak_watchers.fetch_sub(1, std::memory_order_relaxed); }
std::int64_t TensorPeak::above_start() const {
  return std::max<std::int64_t>(0, g_peak_bytes.load(std::memory_order_relaxed) - start_);
}

}  // namespace internal

Tensor Tensor::empty(const Shape& shape, DType dtype) {
  auto impl = new_impl();
  impl->storage = allocate(shape, dtype);
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::meta(const Shape& shape, DType dtype) {
  ctrax::internal::MetaBytes::add(shape, dtype, static_cast<double>(checked_bytes(shape, dtype)));
  auto impl = new_impl();
  impl->shape = shape;
  impl->dtype = dtype;
  return Tensor(std::move(impl));
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  dispatch_all(dtype, [&]<class T>(T) {
    T* p = t.data<T>();
    const T v = static_cast<T>(value);
    for (std::int64_t i = 0, n = t.numel(); i < n; ++i) p[i] = v;
  });
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype) {
  Tensor t = empty(shape, dtype);
  std::memset(t.raw_data(), 0, static_cast<std::size_t>(t.numel()) * itemsize(dtype));
  return t;
}

Tensor Tensor::ones(const Shape& shape, DType dtype) { return full(shape, 1.0, dtype); }
Tensor Tensor::scalar(double value, DType dtype) { return full({}, value, dtype); }

Tensor Tensor::arange(std::int64_t n, DType dtype) {
  Tensor t = empty({n}, dtype);
  dispatch_all(dtype, [&]<class T>(T) {
    for (std::int64_t i = 0; i < n; ++i) t.data<T>()[i] = static_cast<T>(i);
  });
  return t;
}

Tensor Tensor::from_doubles(const std::vector<double>& values, const Shape& shape, DType dtype) {
  if (static_cast<std::int64_t>(values.size()) != ctrax::numel(shape))
    throw std::invalid_argument(fmt::format("{} values given for shape {} ({} elements)",
                                            values.size(), ctrax::to_string(shape),
                                            ctrax::numel(shape)));
  Tensor t = empty(shape, dtype);
  dispatch_all(dtype, [&]<class T>(T) {
    for (std::size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = static_cast<T>(values[i]);
  });
  return t;
}

std::string Tensor::signature() const {
  if (!defined()) return "undefined";
  return fmt::format("{}[{}]{}", short_name(dtype()), fmt::join(shape(), ","),
                     is_meta() ? "?" : "");
}

template <class U> std::vector<U> Tensor::to_vector() const {
  std::vector<U> out(static_cast<std::size_t>(numel()));
  dispatch_all(dtype(), [&]<class T>(T) {
    const T* p = data<T>();
    for (std::size_t i = 0; i < out.size(); ++i) out[i] = static_cast<U>(p[i]);
  });
  return out;
}
template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<std::int32_t> Tensor::to_vector<std::int32_t>() const;
template std::vector<std::uint8_t> Tensor::to_vector<std::uint8_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;

std::vector<double> Tensor::to_doubles() const { return to_vector<double>(); }

double Tensor::item() const {
  if (numel() != 1)
    throw std::invalid_argument("item() needs exactly one element, got " + signature());
  return to_doubles()[0];
}

Tensor Tensor::to(DType dt) const {
  static constexpr OpDef kTo{"to", profile::Family::elementwise, Accepts::any};
  if (dt == dtype()) return *this;
  return define_op(kTo, {*this}, shape(), dt, [&] {
    Tensor out = empty(shape(), dt);
    out.copy_from(*this);
    if (!is_floating(dt) || !is_floating(dtype())) return out;
    return record(kTo, out, {*this}, [from = dtype()](const Tensor& g) {
      return std::vector<Tensor>{g.to(from)};
    });
  });
}

Tensor Tensor::clone() const {
  if (is_meta()) return meta(shape(), dtype());
  Tensor t = empty(shape(), dtype());
  std::memcpy(t.raw_data(), raw_data(), static_cast<std::size_t>(numel()) * itemsize(dtype()));
  return t;
}

Tensor Tensor::detach() const {
  auto impl = new_impl(this->impl());
  impl->node.reset();
  return Tensor(std::move(impl));
}

void Tensor::changed_in_place() {
  if (std::uint64_t* changes = changes_of(impl().storage)) ++*changes;
}

std::uint64_t Tensor::version() const {
  const std::uint64_t* changes = changes_of(impl().storage);
  return changes ? *changes : 0;
}

void Tensor::copy_from(const Tensor& src) {
  if (src.shape() != shape())
    throw std::invalid_argument("copy_from: shape " + src.signature() + " into " + signature());
  changed_in_place();
  if (src.dtype() == dtype()) {
    std::memcpy(raw_data(), src.raw_data(), static_cast<std::size_t>(numel()) * itemsize(dtype()));
    return;
  }
  dispatch_all(dtype(), [&]<class T>(T) {
    dispatch_all(src.dtype(), [&]<class S>(S) {
      const S* s = src.data<S>();
      T* d = data<T>();
      for (std::int64_t i = 0, n = numel(); i < n; ++i) d[i] = static_cast<T>(s[i]);
    });
  });
}

bool Tensor::requires_grad() const { return defined() && impl().node != nullptr; }

Tensor& Tensor::requires_grad_(bool on) {
  if (!on) {
    impl_->node.reset();
    return *this;
  }
  if (!is_floating(dtype()))
    throw std::invalid_argument("only float32/float64 tensors can require a gradient, not " +
                                signature());
  if (!impl_->node) impl_->node = std::make_shared<Node>();
  return *this;
}

const std::shared_ptr<Node>& Tensor::node() const { return impl().node; }
void Tensor::set_node(std::shared_ptr<Node> node) { impl_->node = std::move(node); }

Tensor reshape_view(const Tensor& x, const Shape& shape) {
  if (ctrax::numel(shape) != x.numel())
    throw std::invalid_argument(fmt::format("cannot reshape {} into shape {}", x.signature(),
                                            to_string(shape)));
  auto impl = new_impl(x.impl());
  impl->shape = shape;
  impl->node.reset();
  return Tensor(std::move(impl));
}

// --- printing -------------------------------------------------------------------------------
namespace {

template <class T>
void print_rec(std::string& out, const T* p, const Shape& s, std::size_t axis, std::int64_t offset,
               const std::vector<std::int64_t>& strides, int max_items, int indent) {
  const std::int64_t n = s[axis];
  out += '[';
  auto item = [&](std::int64_t i) {
    if (axis + 1 == s.size()) {
      if constexpr (std::is_floating_point_v<T>) out += fmt::format("{:.6g}", p[offset + i]);
      else if constexpr (std::is_same_v<T, std::uint8_t>) out += p[offset + i] ? "true" : "false";
      else out += fmt::format("{}", p[offset + i]);
    } else {
      print_rec(out, p, s, axis + 1, offset + i * strides[axis], strides, max_items, indent + 1);
    }
  };
  const std::string sep = axis + 1 == s.size() ? ", " : ",\n" + std::string(indent + 1, ' ');
  for (std::int64_t i = 0; i < n; ++i) {
    if (n > max_items && i == max_items / 2) {
      out += "..." + sep;
      i = n - max_items / 2;
    }
    item(i);
    if (i + 1 < n) out += sep;
  }
  out += ']';
}

}  // namespace

std::string Tensor::to_string(int max_items) const {
  if (!defined()) return "Tensor(undefined)";
  if (is_meta()) return "Tensor(" + signature() + ")";
  std::string body;
  dispatch_all(dtype(), [&]<class T>(T) {
    const T* p = data<T>();
    if (rank() == 0) {
      body = fmt::format("{}", p[0]);
      return;
    }
    print_rec(body, p, shape(), 0, 0, contiguous_strides(shape()), max_items, 7);
  });
  return fmt::format("Tensor({}, {})", body, signature());
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

std::string signatures(const std::vector<Tensor>& xs) {
  std::vector<std::string> parts;
  for (const auto& x : xs) parts.push_back(x.signature());
  return fmt::format("({})", fmt::join(parts, ", "));
}

Tensor tensor(std::initializer_list<float> v, const Shape& s) {
  return Tensor::from_doubles({v.begin(), v.end()}, s, DType::float32);
}
Tensor tensor(std::initializer_list<double> v, const Shape& s) {
  return Tensor::from_doubles({v.begin(), v.end()}, s, DType::float64);
}
Tensor tensor(std::initializer_list<int> v, const Shape& s) {
  return Tensor::from_doubles({v.begin(), v.end()}, s, DType::int32);
}
Tensor tensor(std::initializer_list<bool> v, const Shape& s) {
  return Tensor::from_doubles({v.begin(), v.end()}, s, DType::bool_);
}

}  // namespace ctrax
