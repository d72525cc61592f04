#include "core/layer/summary.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <vector>

namespace ctrax {

std::string summary(const Layer& model) {
  struct Row {
    std::string layer, weights;
    std::int64_t n = 0;
  };
  std::vector<Row> rows;
  for (const auto& [name, w] : model.named_weights()) {
    const auto slash = name.rfind('/');
    const std::string layer = name.substr(0, slash), weight = name.substr(slash + 1);
    if (rows.empty() || rows.back().layer != layer) rows.push_back({layer, "", 0});
    Row& r = rows.back();
    r.weights += fmt::format("{}{} {}", r.weights.empty() ? "" : ", ", weight, to_string(w.shape()));
    r.n += w.numel();
  }
  std::size_t lw = 24, ww = 8;
  for (const Row& r : rows) {
    lw = std::max(lw, r.layer.size());
    ww = std::max(ww, r.weights.size());
  }
  std::string out = fmt::format("{:<{}}  {:<{}}  {:>12}\n", "layer", lw, "weights", ww, "parameters");
  std::int64_t total = 0;
  for (const Row& r : rows) {
    out += fmt::format("{:<{}}  {:<{}}  {:>12}\n", r.layer, lw, r.weights, ww, r.n);
    total += r.n;
  }
  return out + fmt::format("total parameters: {}\n", total);
}

}  // namespace ctrax
