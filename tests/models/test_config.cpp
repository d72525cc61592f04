#include <doctest/doctest.h>

#include "models/config.hpp"
#include "tests/helpers.hpp"

using namespace ctrax;
using namespace ctrax::models;

TEST_CASE("TransformerConfig survives the JSON round trip, every stored field") {
  const TransformerConfig c{.d_model = 96, .d_ff = 200, .n_layers = 3, .n_encoder_layers = 2, .n_decoder_layers = 4,
                            .n_heads = 6, .max_len = 77, .dropout = 0.25, .mode = Mode::predict,
                            .positions = Positions::linear_bias, .norm = Norm::post, .scale_embeddings = true};
  const TransformerConfig r = transformer_config_from_json(to_json(c));
  CHECK(r.d_model == 96);
  CHECK(r.d_ff == 200);
  CHECK(r.n_layers == 3);
  CHECK(r.n_encoder_layers == 2);
  CHECK(r.n_decoder_layers == 4);
  CHECK(r.n_heads == 6);
  CHECK(r.max_len == 77);
  CHECK(r.dropout == 0.25);
  CHECK(r.positions == Positions::linear_bias);
  CHECK(r.norm == Norm::post);
  CHECK(r.scale_embeddings);
  CHECK(r.mode == Mode::train);   // not stored: whoever builds the model chooses it
  CHECK(to_json(r) == to_json(c));
}

TEST_CASE("a config from before the optional keys reads as Trax's model, both stacks n_layers deep") {
  const TransformerConfig c = transformer_config_from_json(
      R"({"d_model": 256, "d_ff": 1024, "n_layers": 4, "n_heads": 4, "max_len": 128, "dropout": 0.0, "tokenizer": "char"})");
  CHECK(c.n_encoder_layers == 4);
  CHECK(c.n_decoder_layers == 4);
  CHECK(c.positions == Positions::sinusoidal);
  CHECK(c.norm == Norm::pre);
  CHECK_FALSE(c.scale_embeddings);
}

TEST_CASE("a stored value the command line would refuse is an error naming the key, the range and the value") {
  const std::string ok = R"("d_ff": 8, "n_layers": 1, "n_heads": 1, "max_len": 16, "dropout": 0.1)";
  CHECK_THROWS_WITH_AS(transformer_config_from_json(R"({"d_model": 0, )" + ok + "}"),
                       "\"d_model\": expected a number from 1 to 65536, got 0", std::invalid_argument);
  CHECK_THROWS_WITH_AS(transformer_config_from_json(R"({"d_model": "wide", )" + ok + "}"),
                       "\"d_model\" is \"wide\", expected a number", std::invalid_argument);
  CHECK_THROWS_WITH_AS(transformer_config_from_json(R"({"d_model": 8.5, )" + ok + "}"),
                       "\"d_model\": expected a whole number, got 8.5", std::invalid_argument);
  CHECK(transformer_config_from_json(R"({"d_model": 8.0, )" + ok + "}").d_model == 8);   // 8.0 is 8
  CHECK_THROWS_WITH_AS(transformer_config_from_json(R"({"d_model": 8, )" + ok + R"(, "positions": "spiral"})"),
                       doctest::Contains("\"positions\": expected sinusoidal, learned, rotary or linear-bias, got \"spiral\""),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(transformer_config_from_json(R"({"d_ff": 8})"), "\"d_model\" is missing", std::invalid_argument);
  CHECK_THROWS_WITH_AS(transformer_config_from_json("[1, 2]"), doctest::Contains("expected a JSON object"),
                       std::invalid_argument);
  CHECK_THROWS_WITH_AS(transformer_config_from_json("{"), doctest::Contains("not JSON"), std::invalid_argument);
}

TEST_CASE("the ranges are the command line's: max_len at least 2, dropout below 1") {
  bool max_len = false, dropout = false;
  for (const auto& r : transformer_config_ranges()) {
    if (std::string(r.key) == "max_len") max_len = r.lo == 2;
    if (std::string(r.key) == "dropout") dropout = r.hi < 1;
  }
  CHECK(max_len);
  CHECK(dropout);
}
