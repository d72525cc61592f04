#include "layers/convolution.hpp"

#include <fmt/format.h>

#include "core/tensor/ops.hpp"

namespace ctrax::layers {

namespace {

// One layer for the three: a kernel of `kernel` spatial extents over rank-(2 + kernel.size())
// inputs; `causal` pads the sequence on the left.
class ConvLayer final : public Layer {
 public:
  // What the layer computes: Trax's Conv, CausalConv or ConvTranspose.
  enum class Kind { conv, causal, transpose };

  ConvLayer(std::string name, Kind kind, std::int64_t filters, std::vector<std::int64_t> kernel,
            std::array<std::int64_t, 2> strides, Padding padding, Initializer kernel_init, Initializer bias_init,
            bool use_bias, std::source_location created, std::array<std::int64_t, 2> dilation = {1, 1})
      : Layer(std::move(name), 1, 1, created), kind_(kind), filters_(filters), kernel_(std::move(kernel)),
        strides_(strides), dilation_(dilation), padding_(padding),
        kernel_init_(kernel_init ? std::move(kernel_init) : glorot_normal(-1, -2)), bias_init_(std::move(bias_init)),
        use_bias_(use_bias) {}

 protected:
  void init_weights_and_state(const Signature& input) override {
    const ShapeDtype& x = input.at(0);
    const int spatial = static_cast<int>(kernel_.size());
    if (static_cast<int>(x.shape.size()) < spatial + 2)
      throw std::invalid_argument(fmt::format("{} needs inputs of rank >= {} ({}), got {}", name(), spatial + 2,
                                              spatial == 2 ? "B, H, W, C" : "B, L, C", ctrax::to_string(input)));
    Shape w_shape(kernel_.begin(), kernel_.end());
    w_shape.push_back(x.shape.back());
    w_shape.push_back(filters_);
    const DType dt = weight_dtype(x.dtype);
    const auto keys = rng().split(2);
    add_weight("w", w_shape, dt, kernel_init_, keys[0]);
    if (use_bias_) add_weight("b", {filters_}, dt, bias_init_, keys[1]);
  }

  Stack forward(const Stack& inputs) override {
    Tensor x = inputs[0];
    const Tensor& w = weights()[0];
    const int spatial = static_cast<int>(kernel_.size());
    if (x.rank() < spatial + 2 || x.dim(-1) != w.dim(-2))
      throw std::invalid_argument(fmt::format("{} expects inputs (..., {}{}), got {}", name(),
                                              spatial == 2 ? "H, W, " : "L, ", w.dim(-2), x.signature()));
    // Leading axes beyond the batch join it (Trax's reshape for rank > 4).
    const Shape lead(x.shape().begin(), x.shape().end() - spatial - 1);
    Shape batched{-1};
    batched.insert(batched.end(), x.shape().end() - spatial - 1, x.shape().end());
    x = reshape(x, batched);
    Tensor y;
    if (kind_ == Kind::transpose) {
      y = conv_transpose2d(x, w, {.strides = strides_, .dilation = dilation_, .padding = padding_});
    } else if (spatial == 2) {   // the bias, if any, joins the convolution's own op
      const Tensor bias = use_bias_ ? weights()[1] : Tensor();
      y = conv2d(x, w, bias, {.strides = strides_, .padding = padding_});
    } else {
      if (kind_ == Kind::causal)   // k − 1 zeros before the first position
        x = concatenate({Tensor::zeros({x.dim(0), kernel_[0] - 1, x.dim(2)}, x.dtype()), x}, 1);
      y = conv1d(x, w, strides_[1], padding_);
    }
    if (use_bias_ && (kind_ == Kind::transpose || spatial != 2)) y = y + weights()[1];
    Shape out = lead;
    out.insert(out.end(), y.shape().begin() + 1, y.shape().end());
    return {reshape(y, out)};
  }

 private:
  Kind kind_;
  std::int64_t filters_;
  std::vector<std::int64_t> kernel_;
  std::array<std::int64_t, 2> strides_, dilation_;
  Padding padding_;
  Initializer kernel_init_, bias_init_;
  bool use_bias_;
};

void check_sizes(const char* layer, std::int64_t filters, std::initializer_list<std::int64_t> sizes,
                 std::source_location created) {
  if (filters < 1)
    throw std::invalid_argument(fmt::format("{} (created at {}): filters must be >= 1, got {}", layer,
                                            location_string(created), filters));
  for (std::int64_t s : sizes)
    if (s < 1)
      throw std::invalid_argument(fmt::format("{} (created at {}): kernel sizes, strides and dilations must be >= 1, got {}",
                                              layer, location_string(created), s));
}

}  // namespace

LayerPtr Conv(std::int64_t filters, std::array<std::int64_t, 2> kernel_size, ConvOptions o, std::source_location created) {
  check_sizes("Conv", filters, {kernel_size[0], kernel_size[1], o.strides[0], o.strides[1]}, created);
  return std::make_shared<ConvLayer>("Conv", ConvLayer::Kind::conv, filters,
                                     std::vector<std::int64_t>{kernel_size[0], kernel_size[1]}, o.strides, o.padding,
                                     std::move(o.kernel_initializer), std::move(o.bias_initializer), o.use_bias,
                                     created);
}

LayerPtr Conv1d(std::int64_t filters, std::int64_t kernel_size, Conv1dOptions o, std::source_location created) {
  check_sizes("Conv1d", filters, {kernel_size, o.stride}, created);
  return std::make_shared<ConvLayer>("Conv", ConvLayer::Kind::conv, filters, std::vector<std::int64_t>{kernel_size},
                                     std::array<std::int64_t, 2>{1, o.stride}, o.padding,
                                     std::move(o.kernel_initializer), std::move(o.bias_initializer), o.use_bias,
                                     created);
}

LayerPtr CausalConv(std::int64_t filters, std::int64_t kernel_width, CausalConvOptions o, std::source_location created) {
  check_sizes("CausalConv", filters, {kernel_width}, created);
  return std::make_shared<ConvLayer>("CausalConv", ConvLayer::Kind::causal, filters,
                                     std::vector<std::int64_t>{kernel_width}, std::array<std::int64_t, 2>{1, 1},
                                     Padding::valid, std::move(o.kernel_initializer), std::move(o.bias_initializer),
                                     true, created);
}

LayerPtr ConvTranspose(std::int64_t filters, std::array<std::int64_t, 2> kernel_size, ConvTransposeOptions o,
                       std::source_location created) {
  check_sizes("ConvTranspose", filters,
              {kernel_size[0], kernel_size[1], o.strides[0], o.strides[1], o.rhs_dilation[0], o.rhs_dilation[1]}, created);
  return std::make_shared<ConvLayer>("ConvTranspose", ConvLayer::Kind::transpose, filters,
                                     std::vector<std::int64_t>{kernel_size[0], kernel_size[1]}, o.strides, o.padding,
                                     std::move(o.kernel_initializer), std::move(o.bias_initializer), true, created,
                                     o.rhs_dilation);
}

}  // namespace ctrax::layers
