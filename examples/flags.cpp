#include "examples/flags.hpp"

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstdlib>

namespace ctrax::examples {

namespace {
std::string shown(const std::string& text) { return text.size() > 40 ? text.substr(0, 37) + "..." : text; }
}  // namespace

std::string canonical_integer(const std::string& text) {
  std::size_t i = 0;
  const bool minus = !text.empty() && text[0] == '-';
  if (!text.empty() && (text[0] == '-' || text[0] == '+')) i = 1;
  if (i == text.size()) return "";
  for (std::size_t j = i; j < text.size(); ++j)
    if (!std::isdigit(static_cast<unsigned char>(text[j]))) return "";
  while (i + 1 < text.size() && text[i] == '0') ++i;
  const std::string digits = text.substr(i);
  return minus && digits != "0" ? "-" + digits : digits;
}

bool decimal_number(const std::string& text) {
  std::size_t i = 0;
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  std::size_t digits = 0, dots = 0;
  for (; i < text.size() && (std::isdigit(static_cast<unsigned char>(text[i])) || text[i] == '.'); ++i)
    text[i] == '.' ? ++dots : ++digits;
  if (digits == 0 || dots > 1) return false;
  if (i < text.size() && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
    const std::size_t start = i;
    while (i < text.size() && std::isdigit(static_cast<unsigned char>(text[i]))) ++i;
    if (i == start) return false;
  }
  return i == text.size();
}

CLI::Validator number_in(double lo, double hi, bool lo_open) {
  auto show = [](double x) {   // integers as integers (1048576, not 1.04858e+06)
    return x == std::floor(x) && std::abs(x) < 1e15 ? fmt::format("{}", static_cast<std::int64_t>(x)) : fmt::format("{:g}", x);
  };
  const std::string range = lo_open ? fmt::format("a number above {} and at most {}", show(lo), show(hi))
                                    : fmt::format("a number from {} to {}", show(lo), show(hi));
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        const double v = decimal_number(text) ? std::strtod(text.c_str(), nullptr) : std::nan("");
        if (std::isfinite(v) && (lo_open ? v > lo : v >= lo) && v <= hi) return "";
        return fmt::format("expected {}, got {}", range, shown(text));
      },
      range);
}

// CLI11 names an option's type after the variable it is bound to: INT, UINT, FLOAT, TEXT, ...
// (get_type_name appends each validator's description after a ':').
void decimal_numbers(CLI::App& app) {
  for (CLI::Option* o : app.get_options()) {
    const std::string full = o->get_type_name(), type = full.substr(0, full.find(':'));
    // Decimal digits lose their leading zeros first (a transform runs before every check); then
    // the flag's range (number_in) speaks for anything out of it or not a number at all; last,
    // what passed the range must be of the flag's kind ("1e1" is not a step count).
    if (type == "INT" || type == "UINT") {
      o->transform(CLI::Validator(
          [](std::string& text) -> std::string {
            if (const std::string c = canonical_integer(text); !c.empty()) text = c;
            return "";
          },
          ""));
      o->check(CLI::Validator(
          [unsigned_ = type == "UINT"](const std::string& text) -> std::string {
            const std::string c = canonical_integer(text);
            if (c.empty() || (unsigned_ && c[0] == '-'))
              return fmt::format("expected a whole number{} in decimal digits, got {}", unsigned_ ? " (0 or more)" : "",
                                 shown(text));
            return "";
          },
          ""));
    } else if (type == "FLOAT") {
      o->check(CLI::Validator(
          [](const std::string& text) -> std::string {
            if (decimal_number(text)) return "";
            return fmt::format("expected a decimal number (such as 0.5 or 1e-3), got {}", shown(text));
          },
          ""));
    }
  }
  for (CLI::App* sub : app.get_subcommands([](CLI::App*) { return true; })) decimal_numbers(*sub);
}

}  // namespace ctrax::examples
