// Every number on a command line is decimal, or refused naming the flag; flags a setting does not
// read are refused (examples/flags.hpp, examples/common.hpp).
#include <CLI/CLI.hpp>
#include <doctest/doctest.h>

#include <cstdint>
#include <string>

#include "examples/common.hpp"
#include "examples/flags.hpp"
#include "tests/examples/command_line.hpp"

using namespace ctrax::examples;
using ctrax::testing::error_of_command;

TEST_CASE("canonical_integer and decimal_number: decimal digits only") {
  CHECK(canonical_integer("010") == "10");
  CHECK(canonical_integer("007") == "7");
  CHECK(canonical_integer("0") == "0");
  CHECK(canonical_integer("-0") == "0");
  CHECK(canonical_integer("+5") == "5");
  CHECK(canonical_integer("-012") == "-12");
  for (const char* bad : {"", "-", "0x4", "1e3", "1.0", " 1", "abc", "1_000"}) CHECK(canonical_integer(bad) == "");
  for (const char* good : {"0.5", "1e-3", "-2.5E+4", "010", ".5", "5."}) CHECK(decimal_number(good));
  for (const char* bad : {"", "nan", "inf", "0x1p-3", "1e", "1.2.3", "e5", "."}) CHECK_FALSE(decimal_number(bad));
}

namespace {

struct Program {
  CLI::App app{"test"};
  std::int64_t steps = 5;
  std::uint64_t seed = 0;
  double lr = 0.1;
  int threads = 0;
  Program() {
    auto* train = app.add_subcommand("train");
    train->add_option("--steps", steps)->check(number_in(1, 1000));
    train->add_option("--seed", seed)->check(number_in(0, 1e6));
    train->add_option("--lr", lr)->check(number_in(0, 10, true));
    train->add_option("--threads", threads);   // no range of its own: still decimal
    decimal_numbers(app);
  }
  std::string parse(const std::string& line) { return error_of_command(app, line); }
};

}  // namespace

TEST_CASE("decimal_numbers: leading zeros are decimal, other notations are refused naming the flag") {
  {
    Program p;
    CHECK(p.parse("train --steps 010 --seed 007 --threads 08") == "(no error)");
    CHECK(p.steps == 10);
    CHECK(p.seed == 7);
    CHECK(p.threads == 8);
  }
  const std::pair<const char*, const char*> cases[] = {
      {"train --steps 0x4", "--steps: expected a number from 1 to 1000, got 0x4"},
      {"train --steps 1e1", "--steps: expected a whole number in decimal digits, got 1e1"},
      {"train --steps 2000", "--steps: expected a number from 1 to 1000, got 2000"},
      {"train --seed -1", "--seed: expected a number from 0 to 1000000, got -1"},
      {"train --lr 0x1p-3", "--lr: expected a number above 0 and at most 10, got 0x1p-3"},
      {"train --lr nan", "--lr: expected a number above 0 and at most 10, got nan"},
      {"train --threads 0x4", "--threads: expected a whole number in decimal digits, got 0x4"},
      {"train --threads 1.5", "--threads: expected a whole number in decimal digits, got 1.5"},
  };
  for (const auto& [line, message] : cases) {
    Program p;
    CHECK_MESSAGE(p.parse(line) == message, line);
  }
}

TEST_CASE("a model flag the chosen model does not read is refused, naming the models that read it") {
  const auto parse = [](const std::string& line) {
    CLI::App app{"test"};
    ModelFlags m;
    std::string tokenizer = "char";
    std::int64_t vocab = 100;
    add_model_flags(app, m);
    add_model_choice(app, m, {"transformer", "rnnlm", "grulm"},
                     {{"--vocab-size", [&tokenizer] { return tokenizer == "sentencepiece"; }, "--tokenizer sentencepiece",
                       [&tokenizer] { return "--tokenizer " + tokenizer; }}});
    app.add_option("--tokenizer", tokenizer);
    app.add_option("--vocab-size", vocab);
    return error_of_command(app, line);
  };
  CHECK(parse("--model rnnlm --positions rotary") == "--positions: applies to --model transformer only (here: --model rnnlm)");
  CHECK(parse("--model grulm --dropout 0.1") == "--dropout: applies to --model transformer or rnnlm only (here: --model grulm)");
  CHECK(parse("--model rnnlm --d-ff 64") == "--d-ff: applies to --model transformer only (here: --model rnnlm)");
  CHECK(parse("--vocab-size 50") == "--vocab-size: applies to --tokenizer sentencepiece only (here: --tokenizer char)");
  CHECK(parse("--tokenizer sentencepiece --vocab-size 50") == "(no error)");
  CHECK(parse("--model rnnlm --d-model 32 --n-layers 2 --max-len 64 --dropout 0.1") == "(no error)");
}
