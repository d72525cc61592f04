#include "core/dist/gradient_buckets.hpp"

#include <fmt/format.h>

#include <cstring>
#include <stdexcept>

#include "core/tensor/dispatch.hpp"

namespace ctrax::dist {

GradientBuckets::GradientBuckets(Communicator& comm, const std::vector<Tensor>& weights, std::size_t bucket_bytes)
    : comm_(comm), weights_(weights), places_(weights.size()), added_(weights.size(), false) {
  // Reverse order: the last weights' gradients complete first. A bucket takes consecutive weights
  // of one dtype up to bucket_bytes (at least one weight).
  std::vector<std::size_t> sizes;   // elements per bucket
  std::vector<DType> dtypes;
  for (std::size_t k = weights.size(); k-- > 0;) {
    const Tensor& w = weights[k];
    if (w.dtype() == DType::bool_)
      throw std::invalid_argument(fmt::format("GradientBuckets: weight {} is {}, which cannot be summed", k, w.signature()));
    const auto n = static_cast<std::size_t>(w.numel());
    const bool fits = !sizes.empty() && dtypes.back() == w.dtype() &&
                      (sizes.back() + n) * itemsize(w.dtype()) <= bucket_bytes;
    if (!fits) {
      sizes.push_back(0);
      dtypes.push_back(w.dtype());
      buckets_.emplace_back();
    }
    places_[k] = {buckets_.size() - 1, sizes.back()};
    sizes.back() += n;
    ++buckets_.back().missing;
  }
  for (std::size_t b = 0; b < buckets_.size(); ++b)
    buckets_[b].buffer = Tensor::empty({static_cast<std::int64_t>(sizes[b])}, dtypes[b]);
}

void GradientBuckets::add(std::size_t i, const Tensor& gradient, double scale) {
  if (i >= weights_.size() || added_[i])
    throw std::logic_error(fmt::format("GradientBuckets::add: gradient {} of {} given {}", i, weights_.size(),
                                       i < weights_.size() ? "twice" : "out of range"));
  if (gradient.shape() != weights_[i].shape() || gradient.dtype() != weights_[i].dtype())
    throw std::invalid_argument(fmt::format("GradientBuckets::add: gradient {} is {}, its weight {}", i,
                                            gradient.signature(), weights_[i].signature()));
  added_[i] = true;
  const auto [b, offset] = places_[i];
  Bucket& bucket = buckets_[b];
  dispatch_numeric(gradient.dtype(), [&]<class T>(T) {
    const T* g = gradient.data<T>();
    T* out = bucket.buffer.data<T>() + offset;
    const T s = static_cast<T>(scale);
    const std::int64_t n = gradient.numel();
    for (std::int64_t e = 0; e < n; ++e) out[e] = s * g[e];
  });
  --bucket.missing;
  start_ready();
}

void GradientBuckets::start_ready() {
  while (started_ < buckets_.size() && buckets_[started_].missing == 0) {
    Tensor& buffer = buckets_[started_++].buffer;
    comm_.start_sum(buffer.raw_data(), static_cast<std::size_t>(buffer.numel()), buffer.dtype());
  }
}

std::vector<Tensor> GradientBuckets::finish() {
  for (std::size_t i = 0; i < weights_.size(); ++i)
    if (!added_[i])
      throw std::logic_error(fmt::format("GradientBuckets::finish: gradient {} ({}) was never added", i,
                                         weights_[i].signature()));
  start_ready();
  comm_.wait_all();
  std::vector<Tensor> out;
  out.reserve(weights_.size());
  for (std::size_t i = 0; i < weights_.size(); ++i) {
    Tensor g = Tensor::empty(weights_[i].shape(), weights_[i].dtype());
    const auto [b, offset] = places_[i];
    const std::size_t item = itemsize(g.dtype());
    std::memcpy(g.raw_data(), static_cast<const char*>(buckets_[b].buffer.raw_data()) + offset * item,
                static_cast<std::size_t>(g.numel()) * item);
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace ctrax::dist
