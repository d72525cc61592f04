// A run directory records its definition before any long step (OUT/run.json): a bare resume takes
// it back, another program's run and overlapping --data/--out are refused (examples/common.hpp).
#include <CLI/CLI.hpp>
#include <doctest/doctest.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <string>

#include "core/data/text_files.hpp"
#include "examples/common.hpp"
#include "examples/flags.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/examples/command_line.hpp"
#include "tests/files.hpp"

using namespace ctrax;
using namespace ctrax::examples;
using ctrax::testing::TempDir;
using ctrax::testing::error_of_command;
using ctrax::testing::write_bytes;

namespace {

// An lm-like `train` command: parse a command line, then settle the run (its lock let go after).
struct TrainCommand {
  CLI::App app{"train"};
  ModelFlags m;
  TrainFlags t{.batch_size = 4, .steps = 10, .warmup = 1, .eval_every = 5, .lr = 1e-3, .out = ""};
  explicit TrainCommand(const std::string& task) {
    add_model_flags(app, m);
    add_model_choice(app, m, {"transformer", "rnnlm"});
    add_train_flags(app, t, false);
    decimal_numbers(app);
    t.task = task;
  }
  std::string settle(const std::string& line) {
    return error_of_command(app, line, [&] { settle_run(app, t); });
  }
};

nlohmann::json definition(const std::string& out) { return nlohmann::json::parse(data::read_file(train::definition_file(out))); }

}  // namespace

TEST_CASE("a fresh run writes its definition first; a bare command resumes it as itself") {
  TempDir dir;
  write_bytes(dir / "text.txt", "some text to learn from\n");
  {
    TrainCommand c("lm");
    REQUIRE(c.settle(fmt::format("--data {} --out {} --d-model 32 --n-heads 4 --eval-every 7", dir / "text.txt", dir / "run")) ==
            "(no error)");
  }
  const auto j = definition(dir / "run");
  CHECK(j.at("task") == "lm");
  CHECK(j.at("flags").at("--d-model") == "32");
  CHECK(j.at("flags").at("--data") == dir / "text.txt");
  CHECK_FALSE(j.at("flags").contains("--eval-every"));   // how often to save is not the run's definition…
  CHECK(j.at("settings").at("--eval-every") == "7");     // …but a bare resume keeps it
  REQUIRE(j.at("data").size() == 1);
  CHECK(j.at("data")[0].at("bytes") == 24);
  CHECK(j.at("machine").contains("threads"));
  // Killed before its first checkpoint (while a vocabulary was learned, say): the bare command.
  TrainCommand bare("lm");
  REQUIRE(bare.settle(fmt::format("--out {} --steps 20", dir / "run")) == "(no error)");
  CHECK(bare.m.arch.d_model == 32);
  CHECK(bare.m.arch.n_heads == 4);
  CHECK(bare.t.data == dir / "text.txt");
  CHECK(bare.t.eval_every == 7);
  CHECK(bare.t.steps == 20);
}

TEST_CASE("a run with no checkpoint yet is defined anew by a command that gives run-defining flags") {
  TempDir dir;
  write_bytes(dir / "text.txt", "some text\n");
  REQUIRE(TrainCommand("lm").settle(fmt::format("--data {} --out {} --d-model 32 --n-heads 4", dir / "text.txt", dir / "run")) ==
          "(no error)");
  TrainCommand again("lm");
  REQUIRE(again.settle(fmt::format("--data {} --out {} --d-model 64", dir / "text.txt", dir / "run")) == "(no error)");
  CHECK(again.m.arch.d_model == 64);
  CHECK(again.m.arch.n_heads != 4);   // the default again: nothing is taken from the replaced definition
  CHECK(definition(dir / "run").at("flags").at("--d-model") == "64");
}

TEST_CASE("another program's run, and --data overlapping --out, are refused") {
  TempDir dir;
  write_bytes(dir / "text.txt", "some text\n");
  REQUIRE(TrainCommand("lm").settle(fmt::format("--data {} --out {}", dir / "text.txt", dir / "run")) == "(no error)");
  CHECK(TrainCommand("sentiment").settle(fmt::format("--out {}", dir / "run")) ==
        fmt::format("{} holds a `lm` run; this is `sentiment`: give another --out", dir / "run/run.json"));
  CHECK(TrainCommand("lm").settle(fmt::format("--data {} --out {}", dir / "run", dir / "run")).starts_with(
      fmt::format("--data {} and --out {} overlap", dir / "run", dir / "run")));
  write_bytes(dir / "corpus/a.txt", "text\n");
  CHECK(TrainCommand("lm").settle(fmt::format("--data {} --out {}", dir / "corpus", dir / "corpus/run")).find("overlap") !=
        std::string::npos);
  CHECK(TrainCommand("lm").settle(fmt::format("--data /dev/zero --out {}", dir / "z")) ==
        "/dev/zero: not a regular file (a character device), expected a file or a directory of files");
}
