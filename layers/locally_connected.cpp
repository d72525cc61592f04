#include "layers/locally_connected.hpp"

#include <fmt/format.h>

#include "core/tensor/ops.hpp"

namespace ctrax::layers {

namespace {

class LocallyConnected1dLayer final : public Layer {
 public:
  LocallyConnected1dLayer(std::int64_t filters, std::int64_t k, LocallyConnected1dOptions o, std::source_location created)
      : Layer(fmt::format("LocallyConnected1d_{}_{}", filters, k), 1, 1, created), filters_(filters), k_(k),
        o_(std::move(o)) {}

 protected:
  void init_weights_and_state(const Signature& input) override {
    const ShapeDtype& x = input.at(0);
    if (x.shape.size() < 2)
      throw std::invalid_argument(fmt::format("{} needs inputs (…, L, D), got {}", name(), ctrax::to_string(input)));
    const std::int64_t L = x.shape[x.shape.size() - 2], D = x.shape.back();
    if (o_.padding == LocalPadding::valid && L < k_)
      throw std::invalid_argument(fmt::format("{}: VALID needs at least {} positions, got {}", name(), k_, ctrax::to_string(input)));
    const DType dt = weight_dtype(x.dtype);
    const auto keys = rng().split(2);
    add_weight("w", {L, k_, D, filters_}, dt, o_.kernel_initializer, keys[0]);
    if (o_.use_bias) add_weight("b", {out_length(L), filters_}, dt, o_.bias_initializer, keys[1]);
  }

  Stack forward(const Stack& inputs) override {
    const Tensor& x = inputs[0];
    const Tensor& w = weights()[0];
    const std::int64_t L = w.dim(0), D = w.dim(2);
    if (x.rank() < 2 || x.dim(-2) != L || x.dim(-1) != D)
      throw std::invalid_argument(fmt::format("{} was initialised for (…, {}, {}) (its weights belong to positions), got {}",
                                              name(), L, D, x.signature()));
    const Shape lead(x.shape().begin(), x.shape().end() - 2);
    // z (L, N, k, filters): each position's input times its own k kernels, one batched product.
    const Tensor xl = swapaxes(reshape(x, {-1, L, D}), 0, 1);                        // (L, N, D)
    const Tensor wl = reshape(transpose(w, {0, 2, 1, 3}), {L, D, k_ * filters_});   // (L, D, k·filters)
    const Tensor z = reshape(matmul(xl, wl), {L, -1, k_, filters_});
    const std::int64_t n_out = out_length(L), h = (k_ - 1) / 2;
    Tensor y;
    for (std::int64_t i = 0; i < k_; ++i) {
      const std::int64_t offset = o_.padding == LocalPadding::valid ? (k_ - 1) - i : i - h;
      std::vector<double> index, inside;
      for (std::int64_t t = 0; t < n_out; ++t) {
        std::int64_t s = t + offset;
        const bool in = s >= 0 && s < L;
        if (o_.padding == LocalPadding::wrap) s = ((s % L) + L) % L;
        index.push_back(static_cast<double>(in || o_.padding == LocalPadding::wrap ? s : 0));
        inside.push_back(in || o_.padding == LocalPadding::wrap ? 1.0 : 0.0);
      }
      Tensor shifted = take(squeeze(slice(z, 2, i, i + 1), 2), Tensor::from_doubles(index, {n_out}, DType::int32), 0);
      if (o_.padding == LocalPadding::same) shifted = shifted * Tensor::from_doubles(inside, {n_out, 1, 1}, z.dtype());
      y = y.defined() ? y + shifted : shifted;
    }
    y = swapaxes(y, 0, 1);   // (N, L_out, filters)
    if (o_.use_bias) y = y + weights()[1];
    Shape out = lead;
    out.push_back(n_out);
    out.push_back(filters_);
    return {reshape(y, out)};
  }

 private:
  std::int64_t out_length(std::int64_t L) const { return o_.padding == LocalPadding::valid ? L - k_ + 1 : L; }

  std::int64_t filters_, k_;
  LocallyConnected1dOptions o_;
};

}  // namespace

LayerPtr LocallyConnected1d(std::int64_t filters, std::int64_t kernel_size, LocallyConnected1dOptions o,
                            std::source_location created) {
  if (filters < 1 || kernel_size < 1 || kernel_size % 2 == 0)
    throw std::invalid_argument(fmt::format("LocallyConnected1d (created at {}): filters >= 1 and an odd kernel size, "
                                            "as Trax asserts; got {} and {}", location_string(created), filters, kernel_size));
  return std::make_shared<LocallyConnected1dLayer>(filters, kernel_size, std::move(o), created);
}

}  // namespace ctrax::layers
