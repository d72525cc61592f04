#include "core/train/checkpoint.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <climits>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

namespace ctrax::train {
namespace {

std::string opt_prefix(std::size_t i) { return i == 0 ? "opt/" : fmt::format("opt{}/", i); }

// What the model (and optimizers) expect, by name.
NamedTensors expected_tensors(const Layer& model, const std::vector<OptimizerPtr>& optimizers,
                              bool weights_only) {
  if (!model.initialized())
    throw std::logic_error(fmt::format("checkpoint: {} is not initialised (call init first)",
                                       model.display_name()));
  const NamedTensors weights = model.named_weights();
  NamedTensors out = weights;
  if (weights_only) return out;
  for (auto& [name, s] : model.named_state()) out.emplace_back("state/" + name, s);
  for (std::size_t i = 0; i < optimizers.size(); ++i) {
    auto& opt = *optimizers[i];
    if (!opt.initialized()) opt.init(model.all_weights());
    const auto& slots = opt.slots();
    if (slots.size() != weights.size())
      throw std::logic_error(fmt::format("checkpoint: optimizer {} has slots for {} weights, the "
                                         "model has {}", i, slots.size(), weights.size()));
    for (std::size_t w = 0; w < weights.size(); ++w)
      for (const Slot& s : slots[w])
        out.emplace_back(opt_prefix(i) + weights[w].first + "/" + s.name, s.value);
    if (!opt.averages().empty())
      for (std::size_t w = 0; w < weights.size(); ++w)
        out.emplace_back(opt_prefix(i) + weights[w].first + "/ema", opt.averages()[w]);
  }
  return out;
}

// True for "state/…", "opt/…", "opt1/…", ...: the entries that are not weights.
bool is_state_or_slot(const std::string& name) {
  if (name.rfind("state/", 0) == 0) return true;
  if (name.rfind("opt", 0) != 0) return false;
  const auto slash = name.find('/');
  if (slash == std::string::npos) return false;
  for (std::size_t i = 3; i < slash; ++i)
    if (!std::isdigit(static_cast<unsigned char>(name[i]))) return false;
  return true;
}

std::string list(const std::vector<std::string>& names) {
  const std::size_t shown = std::min<std::size_t>(names.size(), 12);
  std::string s;
  for (std::size_t i = 0; i < shown; ++i) s += "\n    " + names[i];
  if (names.size() > shown) s += fmt::format("\n    ... and {} more", names.size() - shown);
  return s;
}

CheckpointInfo info_from(const std::string& path, const Metadata& m) {
  auto get = [&](const char* key) -> std::string {
    auto it = m.find(key);
    if (it == m.end())
      throw std::runtime_error(fmt::format("{}: checkpoint metadata has no '{}'", path, key));
    return it->second;
  };
  auto format = m.find("format");
  if (format == m.end() || format->second != "ctrax-checkpoint")
    throw std::runtime_error(fmt::format(
        "{}: a safetensors file, but not a ctrax checkpoint (no format = ctrax-checkpoint in its "
        "metadata); load_weights cannot tell which tensors to use", path));
  // Whole non-negative integers only (std::stoll would read "12abc" as 12 and throw "stoll").
  auto integer = [&](const char* key) -> std::uint64_t {
    const std::string text = get(key);
    std::uint64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (text.empty() || ec != std::errc() || end != text.data() + text.size() ||
        (std::string_view(key) != "seed" && v > static_cast<std::uint64_t>(INT64_MAX)))
      throw std::runtime_error(fmt::format("{}: corrupted checkpoint metadata: {} is '{}'", path, key, text));
    return v;
  };
  const std::uint64_t version = integer("format_version");
  if (version > checkpoint_format_version)
    throw std::runtime_error(fmt::format("{}: checkpoint format version {} is newer than this "
                                         "ctrax reads ({})", path, version,
                                         checkpoint_format_version));
  CheckpointInfo info;
  info.step = static_cast<std::int64_t>(integer("step"));
  info.seed = integer("seed");
  info.config = get("config");
  info.model = get("model");
  return info;
}

// What loading the weights alone reads of a file: the weights, the state, and the first
// optimizer's averages ("opt/<weight>/ema"); not the optimizers' other slots.
bool weight_or_average(const std::string& name) {
  return !is_state_or_slot(name) || name.rfind("state/", 0) == 0 ||
         (name.rfind("opt/", 0) == 0 && name.ends_with("/ema"));
}

CheckpointInfo restore(const std::string& path, Layer& model,
                       const std::vector<OptimizerPtr>& optimizers, bool weights_only) {
  const SafetensorsFile file = weights_only ? read_safetensors(path, weight_or_average) : read_safetensors(path);
  CheckpointInfo info = info_from(path, file.metadata);
  const NamedTensors expected = expected_tensors(model, optimizers, weights_only);
  std::map<std::string, Tensor> found;
  for (const auto& [name, t] : file.tensors)
    if (!weights_only || !is_state_or_slot(name)) found.emplace(name, t);
  if (weights_only) {  // the first optimizer's averages, when it kept one for every weight
    std::map<std::string, Tensor> averages;
    for (const auto& [name, t] : file.tensors)
      if (name.rfind("opt/", 0) == 0 && name.size() > 8 && name.ends_with("/ema"))
        averages.emplace(name.substr(4, name.size() - 8), t);
    info.averaged_weights = !averages.empty();
    for (const auto& [name, t] : expected) info.averaged_weights = info.averaged_weights && averages.count(name);
    if (info.averaged_weights)
      for (const auto& [name, t] : expected) found[name] = averages.at(name);
  }
  std::set<std::string> matched;
  std::vector<std::string> missing, unexpected, misshaped;
  for (const auto& [name, t] : expected) {
    auto it = found.find(name);
    if (it == found.end()) {
      missing.push_back(name);
      continue;
    }
    matched.insert(name);
    if (it->second.shape() != t.shape() || it->second.dtype() != t.dtype())
      misshaped.push_back(fmt::format("{} (file {}, model {})", name, it->second.signature(),
                                      t.signature()));
  }
  for (const auto& [name, t] : found)
    if (!matched.count(name)) unexpected.push_back(name);
  if (!missing.empty() || !unexpected.empty() || !misshaped.empty()) {
    std::string msg = fmt::format("{}: checkpoint does not match the model {}", path,
                                  model.display_name());
    if (!missing.empty()) msg += fmt::format("\n  missing from the file ({}):{}", missing.size(), list(missing));
    if (!unexpected.empty())
      msg += fmt::format("\n  unexpected in the file ({}):{}", unexpected.size(), list(unexpected));
    if (!misshaped.empty())
      msg += fmt::format("\n  mis-shaped ({}):{}", misshaped.size(), list(misshaped));
    throw std::runtime_error(msg);
  }
  // Training never writes non-finite values (Loop::check_finite_weights), so they mean a file
  // from elsewhere or from before that check: refused, rather than sampling from NaN.
  for (const auto& [name, t] : expected)
    if (is_floating(t.dtype()) && !std::isfinite(sum_of_squares({found.at(name)})))
      throw std::runtime_error(fmt::format("{}: '{}' holds NaN or infinite values (saved by a run that "
                                           "diverged?); use an earlier checkpoint", path, name));
  // With the weights, the state the trained model kept (BatchNorm's running statistics).
  std::vector<std::pair<Tensor, Tensor>> state_copies;
  if (weights_only) {
    std::map<std::string, Tensor> model_state;
    for (const auto& [name, t] : model.named_state()) model_state.emplace(name, t);
    std::vector<std::string> unplaced;
    for (const auto& [name, t] : file.tensors) {
      if (name.rfind("state/", 0) != 0) continue;
      const auto it = model_state.find(name.substr(6));
      if (it == model_state.end() || it->second.shape() != t.shape() || it->second.dtype() != t.dtype())
        unplaced.push_back(fmt::format("{} ({})", name, it == model_state.end() ? "the model keeps no such state"
                                                                                 : "model " + it->second.signature()));
      else
        state_copies.emplace_back(it->second, t);
    }
    if (!unplaced.empty())
      throw std::runtime_error(fmt::format("{}: state the trained model kept has no place in {}:{}", path,
                                           model.display_name(), list(unplaced)));
  }
  for (const auto& [name, t] : expected) {
    Tensor target = t;
    target.copy_from(found.at(name));
  }
  for (auto& [target, value] : state_copies) target.copy_from(value);
  return info;
}

}  // namespace

void save_checkpoint(const std::string& path, const Layer& model,
                     const std::vector<OptimizerPtr>& optimizers, const CheckpointInfo& info) {
  const Metadata metadata = {{"format", "ctrax-checkpoint"},
                             {"format_version", std::to_string(checkpoint_format_version)},
                             {"step", std::to_string(info.step)},
                             {"seed", std::to_string(info.seed)},
                             {"config", info.config},
                             {"model", model.to_string()}};
  write_safetensors(path, expected_tensors(model, optimizers, false), metadata);
}

CheckpointInfo load_checkpoint(const std::string& path, Layer& model,
                               const std::vector<OptimizerPtr>& optimizers) {
  return restore(path, model, optimizers, false);
}

CheckpointInfo load_weights(const std::string& path, Layer& model) {
  return restore(path, model, {}, true);
}

CheckpointInfo read_checkpoint_info(const std::string& path) {
  return info_from(path, read_safetensors_metadata(path));
}

CheckpointInfo init_from_file(const std::string& path, Layer& model, bool weights_only) {
  return weights_only ? load_weights(path, model) : load_checkpoint(path, model, {});
}

std::string LoadReport::describe() const {
  std::string s = fmt::format("loaded {} weights{}:{}", loaded.size(), averaged_weights ? " (the file's averages)" : "",
                              list(loaded));
  s += fmt::format("\nnewly initialised {}:{}", initialised.size(), initialised.empty() ? " none" : list(initialised));
  s += fmt::format("\nunused in the file {}:{}", unused.size(), unused.empty() ? " none" : list(unused));
  return s;
}

LoadReport load_matching_weights(const std::string& path, Layer& model, const std::vector<WeightMap>& maps) {
  const SafetensorsFile file = read_safetensors(path, weight_or_average);
  info_from(path, file.metadata);   // a ctrax checkpoint, or a clear error
  if (!model.initialized())
    throw std::logic_error(fmt::format("load_matching_weights: {} is not initialised (call init first)",
                                       model.display_name()));
  // The file's weights by name, its averages instead when it keeps one for every weight.
  std::map<std::string, Tensor> weights, averages;
  for (const auto& [name, t] : file.tensors) {
    if (!is_state_or_slot(name)) weights.emplace(name, t);
    else if (name.rfind("opt/", 0) == 0 && name.size() > 8 && name.ends_with("/ema"))
      averages.emplace(name.substr(4, name.size() - 8), t);
  }
  LoadReport report;
  report.averaged_weights = !averages.empty() && averages.size() == weights.size();
  for (const auto& [name, t] : weights) report.averaged_weights = report.averaged_weights && averages.count(name);
  if (report.averaged_weights) weights = averages;

  std::vector<std::pair<Tensor, Tensor>> copies;   // (model's weight, file's tensor)
  std::set<std::string> used;
  std::vector<std::string> misshaped;
  for (const auto& [name, t] : model.named_weights()) {
    const auto map = std::find_if(maps.begin(), maps.end(), [&](const WeightMap& m) { return name.starts_with(m.to); });
    const auto it = map != maps.end() ? weights.find(map->from + name.substr(map->to.size())) : weights.end();
    if (it == weights.end()) {
      report.initialised.push_back(name);
      continue;
    }
    used.insert(it->first);
    if (it->second.shape() != t.shape() || it->second.dtype() != t.dtype())
      misshaped.push_back(fmt::format("{} (file {} as {}, model {})", name, it->first, it->second.signature(), t.signature()));
    else if (is_floating(t.dtype()) && !std::isfinite(sum_of_squares({it->second})))
      throw std::runtime_error(fmt::format("{}: '{}' holds NaN or infinite values; use an earlier checkpoint", path, it->first));
    copies.emplace_back(t, it->second);
    report.loaded.push_back(name);
  }
  if (!misshaped.empty())
    throw std::runtime_error(fmt::format("{}: weights of the same name differ in shape, so {} loads none of them:{}", path,
                                         model.display_name(), list(misshaped)));
  for (const auto& [name, t] : weights)
    if (!used.count(name)) report.unused.push_back(name);
  if (report.loaded.empty()) {
    std::vector<std::string> model_names, file_names;
    for (const auto& [name, t] : model.named_weights()) model_names.push_back(name);
    for (const auto& [name, t] : weights) file_names.push_back(name);
    std::vector<std::string> mapping;
    for (const auto& m : maps) mapping.push_back(fmt::format("\"{}\" in the file to \"{}\" in the model", m.from, m.to));
    throw std::runtime_error(fmt::format("{}: no weight of {} matches one of the file's (mapping {})\n  the model's:{}\n  "
                                         "the file's:{}", path, model.display_name(), fmt::join(mapping, "; "),
                                         list(model_names), list(file_names)));
  }
  for (auto& [target, value] : copies) target.copy_from(value);
  return report;
}

}  // namespace ctrax::train
