// examples/flags.hpp — how every ctrax program reads a number from its command line.
//
// CLI11 converts integers with strtoll's base 0, so "--steps 010" would run 8 steps (octal) and
// "0x10" would be 16; and a float flag takes hex floats and "inf". A number on a command line is
// written in decimal, so every program here reads it that way, or refuses it naming the flag:
//   - number_in(lo, hi) on a flag: its range, checked before any conversion can saturate it;
//   - decimal_numbers(app), once every flag is declared: every integer flag of the program and its
//     subcommands accepts only [+-]digits (leading zeros dropped: "010" is ten), every float flag
//     only a decimal number ("1e-3", "0.5"). Flags are found by the type CLI11 records for them,
//     so one a program adds later is covered too.
#pragma once

#include <string>

// CLI11's types, declared only: a program that declares flags includes <CLI/CLI.hpp> itself, and a
// file that only reads numbers (canonical_integer) does not pay for parsing it.
namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace ctrax::examples {

// A finite number from lo to hi (lo itself excluded when lo_open). NaN, infinities and
// out-of-range values are refused with the bounds as written ("--lr: expected a number above 0
// and at most 10, got nan").
CLI::Validator number_in(double lo, double hi, bool lo_open = false);

// Makes every integer and float flag of `app` (and of its subcommands) decimal, as above.
void decimal_numbers(CLI::App& app);

// The text as a decimal integer (no sign other than '-', no leading zeros), or "" when it is not
// one ("007" -> "7", "-0" -> "0", "1e3" -> "", "0x4" -> ""). For tests and the checks above.
std::string canonical_integer(const std::string& text);
// True when the text is a decimal number: digits with at most one '.', then an optional exponent.
bool decimal_number(const std::string& text);

}  // namespace ctrax::examples
