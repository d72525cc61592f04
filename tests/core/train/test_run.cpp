// A run directory's rules (core/train/run.hpp) with settings given as literals, no command line:
// what a fresh run records, what a resume adopts and refuses, and the stored configuration's errors.
// (tests/examples/test_run_directory.cpp drives the same rules through the examples' flags.)
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <filesystem>

#include "core/data/text_files.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/run.hpp"
#include "layers/layers.hpp"
#include "tests/core/train/temp_dir.hpp"
#include "tests/files.hpp"

using namespace ctrax;
using namespace ctrax::train;
using ctrax::testing::error_of;
using ctrax::testing::TempDir;
using ctrax::testing::write_bytes;

namespace {

// --data is given unless `bare` (then it is the flag's default, as a bare command line leaves it).
RunRequest request(const TempDir& dir, RunSettings settings, const std::string& task = "lm", bool bare = false) {
  settings.emplace("--data", RunSetting{bare ? "" : dir / "text.txt", !bare});
  return {.out = dir / "run", .task = task, .settings = std::move(settings)};
}

nlohmann::json definition(const TempDir& dir) { return nlohmann::json::parse(data::read_file(definition_file(dir / "run"))); }

// A checkpoint in OUT with this configuration (a one-weight model: what is stored besides does not matter here).
void write_checkpoint(const TempDir& dir, const std::string& config) {
  std::filesystem::create_directories(dir / "run");
  auto model = layers::Dense(1);
  model->init(ShapeDtype{{1, 1}});
  save_checkpoint(checkpoint_file(dir / "run"), *model, {}, {.step = 5, .seed = 3, .config = config});
}

}  // namespace

TEST_CASE("settle_run: a fresh run records its defining settings, its data and how often it saves") {
  TempDir dir;
  write_bytes(dir / "text.txt", "abc\n");
  const SettledRun s = settle_run(request(dir, {{"--d-model", {"32", true}}, {"--seed", {"0", false}},
                                                {"--eval-every", {"7", true}}, {"--steps", {"10", true}}}));
  CHECK_FALSE(s.resumed);
  CHECK(s.adopt.empty());
  CHECK(s.lock != nullptr);
  CHECK(s.defining == std::map<std::string, std::string>{{"--d-model", "32"}, {"--data", dir / "text.txt"}, {"--seed", "0"}});
  const auto j = definition(dir);
  CHECK(j.at("task") == "lm");
  CHECK(j.at("flags").size() == 3);
  CHECK(j.at("settings").at("--eval-every") == "7");
  CHECK(j.at("data")[0].at("bytes") == 4);
  CHECK(changes_freely("--steps"));
  CHECK_FALSE(changes_freely("--lr"));
}

TEST_CASE("settle_run: a bare command resumes the recorded run; another task or a second trainer is refused") {
  TempDir dir;
  write_bytes(dir / "text.txt", "abc\n");
  settle_run(request(dir, {{"--d-model", {"32", true}}, {"--eval-every", {"7", true}}}));   // its lock let go
  {
    const SettledRun bare = settle_run(request(dir, {{"--d-model", {"512", false}}, {"--eval-every", {"100", false}}}, "lm", true));
    CHECK(bare.adopt == std::map<std::string, std::string>{{"--d-model", "32"}, {"--eval-every", "7"}, {"--data", dir / "text.txt"}});
    CHECK(error_of([&] { settle_run(request(dir, {})); }).find("another trainer") != std::string::npos);   // `bare` holds it
  }
  CHECK(error_of([&] { settle_run(request(dir, {}, "sentiment")); }) ==
        definition_file(dir / "run") + " holds a `lm` run; this is `sentiment`: give another --out");
}

TEST_CASE("settle_run: resuming a checkpoint refuses every differing setting at once, takes --lr with a note") {
  TempDir dir;
  write_bytes(dir / "text.txt", "abc\n");
  settle_run(request(dir, {{"--d-model", {"32", true}}, {"--n-heads", {"4", true}}, {"--lr", {"0.001", true}}}));
  write_checkpoint(dir, R"({"task": "lm", "planned_steps": 40})");
  const std::string e = error_of([&] {
    settle_run(request(dir, {{"--d-model", {"64", true}}, {"--n-heads", {"8", true}}, {"--lr", {"1e-3", true}}}));
  });
  CHECK(e.find("continues a run whose flags differ from the command line's:\n  --d-model 64 (the run's: 32)\n"
               "  --n-heads 8 (the run's: 4)\n") != std::string::npos);
  const SettledRun s = settle_run(request(dir, {{"--d-model", {"512", false}}, {"--lr", {"0.0005", true}}}));
  CHECK(s.resumed);
  CHECK(s.adopt == std::map<std::string, std::string>{{"--d-model", "32"}});
  CHECK(s.defining.at("--lr") == "0.0005");
  CHECK(s.planned_steps == 40);
}

TEST_CASE("settle_run: changed data is refused, naming the change, unless asked for; data inside the run is refused") {
  TempDir dir;
  write_bytes(dir / "text.txt", "abc\n");
  settle_run(request(dir, {}));
  write_checkpoint(dir, R"({"task": "lm"})");
  write_bytes(dir / "text.txt", "abcd\n");
  CHECK(error_of([&] { settle_run(request(dir, {})); }).find("the data changed since this run began") != std::string::npos);
  RunRequest changed = request(dir, {});
  changed.data_changed = true;
  CHECK(error_of([&] { settle_run(changed); }) == "(no error)");
  RunRequest inside = request(dir, {});
  inside.settings["--data"] = {dir / "run", true};
  CHECK(error_of([&] { settle_run(inside); }).find("overlap") != std::string::npos);
}

TEST_CASE("StoredConfig: values by key, each error naming the file, the key, what was expected and what came") {
  TempDir dir;
  CHECK(error_of([&] { StoredConfig::of_run(dir / "run"); }) == dir / "run" + ": no model.safetensors here; train a model first");
  write_checkpoint(dir, R"({"task": "lm", "tokenizer": "char", "d_model": 32, "tokenizer_crc32": 7, "half": 2.5,
                            "huge": 1e30, "past_2_64": 222222222222222222222222})");
  const StoredConfig c = StoredConfig::of_run(dir / "run");
  CHECK(c.string("tokenizer") == "char");
  CHECK(c.integer("d_model") == 32);
  CHECK(c.integer("absent", 9) == 9);
  CHECK(c.number("half", 0) == 2.5);
  CHECK(error_of([&] { c.integer("tokenizer"); }) ==
        c.file() + ": config's \"tokenizer\" is \"char\", expected a whole number");
  // Neither truncated (2.5 is not 2) nor converted out of range (undefined behaviour): refused.
  CHECK(error_of([&] { c.integer("half"); }) == c.file() + ": config's \"half\" is 2.5, expected a whole number");
  CHECK(error_of([&] { c.integer("huge"); }).find("\"huge\" is 1e+30, expected a whole number") != std::string::npos);
  CHECK(error_of([&] { c.integer("past_2_64"); }).find("expected a whole number") != std::string::npos);
  CHECK(error_of([&] { c.string("absent"); }) == c.file() + ": config has no \"absent\" (not made by this example?)");
  CHECK(error_of([&] { c.check_task("sentiment", "give another --out"); }) ==
        c.file() + " was trained by `lm`; this is `sentiment`: give another --out");
  CHECK(error_of([&] { c.check_tokenizer(dir / "run"); }) ==
        vocabulary_file(dir / "run") + ": no such SentencePiece model (" + c.file() + " was trained with one)");
  CHECK(error_of([&] { weights_to_use(c, "sentiment"); }).find("was trained by `lm`") != std::string::npos);
}
