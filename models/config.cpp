#include "models/config.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <stdexcept>

namespace ctrax::models {

using nlohmann::json;

const std::vector<ConfigRange>& transformer_config_ranges() {
  static const std::vector<ConfigRange> ranges = {
      {"d_model", 1, 1 << 16}, {"d_ff", 1, 1 << 20}, {"n_layers", 1, 1000},
      {"n_encoder_layers", 1, 1000}, {"n_decoder_layers", 1, 1000},
      {"n_heads", 1, 1024},    {"max_len", 2, 1 << 20}, {"dropout", 0, 0.99}};
  return ranges;
}

std::string to_string(Positions p) {
  switch (p) {
    case Positions::sinusoidal: return "sinusoidal";
    case Positions::learned: return "learned";
    case Positions::rotary: return "rotary";
    case Positions::linear_bias: return "linear-bias";
  }
  return "?";
}

std::string to_string(Norm n) { return n == Norm::post ? "post" : "pre"; }

Positions parse_positions(const std::string& name) {
  for (const Positions p : {Positions::sinusoidal, Positions::learned, Positions::rotary, Positions::linear_bias})
    if (to_string(p) == name) return p;
  throw std::invalid_argument(fmt::format(
      "\"positions\": expected sinusoidal, learned, rotary or linear-bias, got \"{}\"", name));
}

Norm parse_norm(const std::string& name) {
  if (name == "pre") return Norm::pre;
  if (name == "post") return Norm::post;
  throw std::invalid_argument(fmt::format("\"norm\": expected pre or post, got \"{}\"", name));
}

std::string to_json(const TransformerConfig& c) {
  const json j = {{"d_model", c.d_model},
                  {"d_ff", c.d_ff},
                  {"n_layers", c.n_layers},
                  {"n_encoder_layers", c.n_encoder_layers},
                  {"n_decoder_layers", c.n_decoder_layers},
                  {"n_heads", c.n_heads},
                  {"max_len", c.max_len},
                  {"dropout", c.dropout},
                  {"positions", to_string(c.positions)},
                  {"norm", to_string(c.norm)},
                  {"scale_embeddings", c.scale_embeddings}};
  return j.dump();
}

namespace {

std::string show(double x) {   // integers as integers (1048576, not 1.04858e+06)
  return x == std::floor(x) && std::abs(x) < 1e15 ? fmt::format("{}", static_cast<std::int64_t>(x)) : fmt::format("{:g}", x);
}

// j[key] as a number within its range (ranged keys) or any number; errors name the key.
double number(const json& j, const std::string& key) {
  if (!j.contains(key)) throw std::invalid_argument(fmt::format("\"{}\" is missing", key));
  const json& v = j.at(key);
  if (!v.is_number()) throw std::invalid_argument(fmt::format("\"{}\" is {}, expected a number", key, v.dump()));
  const double x = v.get<double>();
  for (const auto& r : transformer_config_ranges())
    if (key == r.key && !(std::isfinite(x) && x >= r.lo && x <= r.hi))
      throw std::invalid_argument(fmt::format("\"{}\": expected a number from {} to {}, got {}", key, show(r.lo), show(r.hi), v.dump()));
  return x;
}

// j[key] as number() reads it, and a whole number: a layer count of 2.5 is not 2.
std::int64_t whole_number(const json& j, const std::string& key) {
  const double x = number(j, key);
  if (x != std::floor(x))
    throw std::invalid_argument(fmt::format("\"{}\": expected a whole number, got {}", key, j.at(key).dump()));
  return static_cast<std::int64_t>(x);
}

}  // namespace

TransformerConfig transformer_config_from_json(const std::string& json_text) {
  json j;
  try {
    j = json::parse(json_text);
  } catch (const json::exception& e) {
    throw std::invalid_argument(fmt::format("not JSON: {}", e.what()));
  }
  if (!j.is_object()) throw std::invalid_argument("expected a JSON object of the model's settings");
  TransformerConfig c;
  c.d_model = whole_number(j, "d_model");
  c.d_ff = whole_number(j, "d_ff");
  c.n_layers = static_cast<int>(whole_number(j, "n_layers"));
  // Older checkpoints: both stacks had n_layers blocks.
  const auto stack = [&](const char* key) {
    return j.contains(key) ? static_cast<int>(whole_number(j, key)) : c.n_layers;
  };
  c.n_encoder_layers = stack("n_encoder_layers");
  c.n_decoder_layers = stack("n_decoder_layers");
  c.n_heads = static_cast<int>(whole_number(j, "n_heads"));
  c.max_len = whole_number(j, "max_len");
  c.dropout = number(j, "dropout");
  const auto text = [&](const char* key, const char* fallback) {
    if (!j.contains(key)) return std::string(fallback);
    if (!j.at(key).is_string())
      throw std::invalid_argument(fmt::format("\"{}\" is {}, expected a string", key, j.at(key).dump()));
    return j.at(key).get<std::string>();
  };
  c.positions = parse_positions(text("positions", "sinusoidal"));
  c.norm = parse_norm(text("norm", "pre"));
  if (j.contains("scale_embeddings")) {
    if (!j.at("scale_embeddings").is_boolean())
      throw std::invalid_argument(fmt::format("\"scale_embeddings\" is {}, expected true or false", j.at("scale_embeddings").dump()));
    c.scale_embeddings = j.at("scale_embeddings").get<bool>();
  }
  return c;
}

}  // namespace ctrax::models
