// ctrax/core/layer/layer_error.hpp — the error every layer failure comes out as.
//
// Anything thrown inside a layer's init or forward is caught by Layer::operator() and rethrown
// as a LayerError; each combinator it passes through on the way out adds its own name (and the
// child's index), so the message names the whole path from the root, Trax's format:
//
//   LayerError: Exception passing through layer Serial/Branch_out2[0]/Dense_8[1] (in forward):
//     layer created at examples/my_model.cpp:12
//     layer input shapes: (f32[2,5,16])
//     Dense_8 expects inputs (..., 8), got f32[2,5,16]
#pragma once

#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace ctrax {

class LayerError : public std::runtime_error {
 public:
  LayerError(std::string segment, std::string method, std::source_location created,
             std::string inputs, std::string message);
  const std::string& path() const { return path_; }      // "Serial/Dense_512[1]"
  const std::string& method() const { return method_; }  // "forward", "init", ...
  const std::string& message() const { return message_; }  // the original error
  // Used by combinators while the error propagates outwards.
  void mark_index(std::size_t index);               // innermost-unindexed segment gets [index]
  void prepend(const std::string& segment);

 private:
  void rebuild();
  std::string path_, method_, created_, inputs_, message_;
  std::vector<std::string> segments_;
  std::size_t indexed_ = 0;  // how many outer segments already carry their index
};

// "tests/foo.cpp:12" from a source_location, with leading "../" removed.
std::string location_string(const std::source_location& loc);

// A layer's numeric setting that must be a finite number (an activation's slope, a threshold): a NaN
// or an infinity would make its outputs NaN, 0 or ±inf in silence — ThresholdToBinary(NaN) says 0 of
// every input. Throws std::invalid_argument naming the layer, where it was created and the setting:
//   LeakyRelu (created at model.cpp:12): a must be a finite number, got nan
void check_finite_setting(double value, std::string_view layer, std::string_view setting,
                          const std::source_location& created);

}  // namespace ctrax
