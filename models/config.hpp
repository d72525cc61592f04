// ctrax/models/config.hpp — a TransformerConfig as text: what a checkpoint stores of the model it
// holds, read back checked, and the ranges every size must keep.
//
//   std::string j = models::to_json(c);
//     {"d_model":256,"d_ff":1024,"n_layers":4,"n_encoder_layers":4,"n_decoder_layers":4,"n_heads":4,
//      "max_len":128,"dropout":0.1,"positions":"sinusoidal","norm":"pre","scale_embeddings":false}
//   TransformerConfig c2 = models::transformer_config_from_json(j);   // == c (mode: train)
//
// The round trip keeps every field that defines the model's weights and computation; `mode`
// (chosen by whoever builds the model), `dropout_shared_axes` and `ff_activation` (not
// serialisable; Trax's defaults) are not stored. Reading is lenient where older checkpoints are
// concerned — n_encoder_layers / n_decoder_layers default to n_layers, positions, norm and
// scale_embeddings to Trax's choices — and strict about values: a number outside its range, a
// value of the wrong type or an unknown name is std::invalid_argument naming the key, what was
// expected and what came ("\"max_len\": expected a number from 2 to 1048576, got 0").
//
// The ranges are the command line's too: the examples' flags (examples/common.hpp) check with
// the same table, so a value that trains can be saved and read back, and a hand-edited
// checkpoint cannot build a model the command line would refuse.
#pragma once

#include <string>
#include <vector>

#include "models/transformer.hpp"

namespace ctrax::models {

// A field's allowed values: lo ≤ x ≤ hi.
struct ConfigRange {
  const char* key;    // the JSON key; the flag is "--" + key with '_' → '-'
  double lo, hi;
};
// d_model, d_ff, n_layers (and each stack's), n_heads, max_len (≥ 2: a language model's context
// holds a start token and one more), dropout.
const std::vector<ConfigRange>& transformer_config_ranges();

std::string to_string(Positions p);   // "sinusoidal", "learned", "rotary", "linear-bias"
std::string to_string(Norm n);        // "pre", "post"
// The names above back to values; anything else is std::invalid_argument listing the names.
Positions parse_positions(const std::string& name);
Norm parse_norm(const std::string& name);

std::string to_json(const TransformerConfig& c);   // a JSON object, as above
// Reads the keys above from a JSON object text (other keys are ignored: a checkpoint's config
// holds the run's other settings beside them).
TransformerConfig transformer_config_from_json(const std::string& json_text);

}  // namespace ctrax::models
