// tests/examples/command_line.hpp — what a command line gets from a program's flags, as text.
#pragma once

#include <CLI/CLI.hpp>

#include <functional>
#include <stdexcept>
#include <string>

#include "tests/files.hpp"

namespace ctrax::testing {

// The message `app` gives `line` — CLI11's, or what `then` throws after a good parse — or
// "(no error)".
inline std::string error_of_command(CLI::App& app, const std::string& line, const std::function<void()>& then = {}) {
  return error_of([&] {
    try {
      app.parse(line, false);
    } catch (const CLI::ParseError& e) {
      throw std::runtime_error(e.what());
    }
    if (then) then();
  });
}

}  // namespace ctrax::testing
