#include "models/resnet.hpp"

#include <fmt/format.h>

#include "layers/layers.hpp"

namespace ctrax::models {

using namespace ctrax::layers;

namespace {

struct Resnet50Parts {
  std::function<LayerPtr()> norm, non_linearity;
};

LayerList ConvBlock(std::int64_t kernel_size, std::array<std::int64_t, 3> filters, std::array<std::int64_t, 2> strides,
                    const Resnet50Parts& p) {
  const std::int64_t ks = kernel_size;
  const auto [filters1, filters2, filters3] = filters;
  const LayerList main = {Conv(filters1, {1, 1}, {.strides = strides}),      p.norm(), p.non_linearity(),
                          Conv(filters2, {ks, ks}, {.padding = Padding::same}), p.norm(), p.non_linearity(),
                          Conv(filters3, {1, 1}),                             p.norm()};
  const LayerList shortcut = {Conv(filters3, {1, 1}, {.strides = strides}), p.norm()};
  return {ResidualWithShortcut(main, Serial(shortcut)), p.non_linearity()};
}

LayerList IdentityBlock(std::int64_t kernel_size, std::array<std::int64_t, 3> filters, const Resnet50Parts& p) {
  const std::int64_t ks = kernel_size;
  const auto [filters1, filters2, filters3] = filters;
  const LayerList main = {Conv(filters1, {1, 1}),                             p.norm(), p.non_linearity(),
                          Conv(filters2, {ks, ks}, {.padding = Padding::same}), p.norm(), p.non_linearity(),
                          Conv(filters3, {1, 1}),                             p.norm()};
  return {Residual(main), p.non_linearity()};
}

}  // namespace

LayerPtr Resnet50(const Resnet50Options& o) {
  if (o.d_hidden < 1 || o.n_output_classes < 1)
    throw std::invalid_argument("Resnet50: d_hidden and n_output_classes must be >= 1");
  const Resnet50Parts p{
      [&] { return o.norm ? o.norm(o.mode) : BatchNorm({.mode = o.mode}); },
      [&] { return o.non_linearity ? o.non_linearity() : Relu(); }};
  const std::int64_t d = o.d_hidden;
  const auto conv_block = [&](std::int64_t m, std::array<std::int64_t, 2> strides) {
    return ConvBlock(3, {m * d, m * d, 4 * m * d}, strides, p);
  };
  const auto identity_blocks = [&](std::int64_t m, int count) {
    LayerList out;
    for (int i = 0; i < count; ++i) out.push_back(Serial(IdentityBlock(3, {m * d, m * d, 4 * m * d}, p)));
    return out;
  };
  return Serial(ToFloat(), Conv(d, {7, 7}, {.strides = {2, 2}, .padding = Padding::same}), p.norm(), p.non_linearity(),
                MaxPool({3, 3}, {.strides = std::array<std::int64_t, 2>{2, 2}}),
                conv_block(1, {1, 1}), identity_blocks(1, 2),
                conv_block(2, {2, 2}), identity_blocks(2, 3),
                conv_block(4, {2, 2}), identity_blocks(4, 5),
                conv_block(8, {2, 2}), identity_blocks(8, 2),
                AvgPool({7, 7}), Flatten(), Dense(o.n_output_classes));
}

LayerList WideResnetBlock(std::int64_t channels, std::array<std::int64_t, 2> strides, double bn_momentum, Mode mode) {
  return {BatchNorm({.momentum = bn_momentum, .mode = mode}), Relu(),
          Conv(channels, {3, 3}, {.strides = strides, .padding = Padding::same}),
          BatchNorm({.momentum = bn_momentum, .mode = mode}), Relu(),
          Conv(channels, {3, 3}, {.padding = Padding::same})};
}

LayerList WideResnetGroup(int n, std::int64_t channels, std::array<std::int64_t, 2> strides, double bn_momentum,
                          Mode mode) {
  const LayerPtr shortcut = Conv(channels, {3, 3}, {.strides = strides, .padding = Padding::same});
  LayerList rest;   // n − 1 blocks inside one Residual, as Trax writes it
  for (int i = 0; i + 1 < n; ++i) rest.push_back(Serial(WideResnetBlock(channels, {1, 1}, bn_momentum, mode)));
  return {ResidualWithShortcut(Serial(WideResnetBlock(channels, strides, bn_momentum, mode)), shortcut),
          Residual(rest)};
}

LayerPtr WideResnet(const WideResnetOptions& o) {
  if (o.n_blocks < 1 || o.widen_factor < 1 || o.n_output_classes < 1)
    throw std::invalid_argument(fmt::format("WideResnet: n_blocks, widen_factor and n_output_classes must be >= 1, "
                                            "got {}, {}, {}", o.n_blocks, o.widen_factor, o.n_output_classes));
  const std::int64_t k = o.widen_factor;
  return Serial(ToFloat(), Conv(16, {3, 3}, {.padding = Padding::same}),
                WideResnetGroup(o.n_blocks, 16 * k, {1, 1}, o.bn_momentum, o.mode),
                WideResnetGroup(o.n_blocks, 32 * k, {2, 2}, o.bn_momentum, o.mode),
                WideResnetGroup(o.n_blocks, 64 * k, {2, 2}, o.bn_momentum, o.mode),
                BatchNorm({.momentum = o.bn_momentum, .mode = o.mode}), Relu(),
                AvgPool({8, 8}), Flatten(), Dense(o.n_output_classes));
}

}  // namespace ctrax::models
