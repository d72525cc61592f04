// examples/image.cpp — Trax's image models on Fashion-MNIST: 28×28 grey pictures of clothes in
// 10 classes (Xiao et al. 2017), 60,000 to train and 10,000 to test, from Debian's
// dataset-fashion-mnist (/usr/share/datasets/fashion-mnist; scripts/setup.sh installs it).
//
//   build/examples/image train --out runs/fashion_mlp                                  Trax's MLP
//   build/examples/image train --out runs/fashion_cnn --model convnet --n-blocks 2 --minutes 15
//   build/examples/image train --out runs/fashion_wrn --model wideresnet --minutes 15
//   build/examples/image eval --out runs/fashion_wrn [--json confusion.json]           the test split
//
// MODELS (models/mlp.hpp, conv_net.hpp, resnet.hpp, built by name through models/registry.hpp):
//   mlp          Flatten, Dense(512), Relu, Dense(512), Relu, Dense(10)       --widths 512,512
//   convnet      stages of --n-blocks [Conv 3×3, BatchNorm, Relu] and a MaxPool(2×2), one per
//                --filters entry (32,64), then Flatten, Dropout(--dropout), Dense(10)
//   wideresnet   WRN-(6n+4)-k, n = --n-blocks, k = --widen-factor; the images padded to 32×32
//                (its AvgPool(8×8) needs 8×8 maps), as CIFAR's are
// DATA. A fixed 5,000 of the 60,000 training images (the same for every run and seed) are held
// out: the Loop evaluates on them and keeps the best checkpoint by their accuracy; `eval` reads
// the test split only. --augment shifts each training image by up to 2 pixels and flips it
// left–right half the time (the augmentation image models are trained with; drawn from the step's
// key, so a resumed run draws the same). Pixels are in [0, 1].
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <memory>
#include <nlohmann/json.hpp>

#include "core/tensor/ops.hpp"
#include "examples/common.hpp"
#include "examples/flags.hpp"
#include "examples/image.hpp"

namespace ctrax::examples::image {

using json = nlohmann::json;

namespace {
constexpr std::int64_t kHeldOut = 5000;
}

std::int64_t side_for(const std::string& model) { return model == "wideresnet" ? 32 : 28; }

namespace {
// The registry's name of each --model.
std::string registry_name(const std::string& model) {
  return model == "wideresnet" ? "WideResnet" : model == "convnet" ? "ConvNet" : "MLP";
}
// A config key holding a list of numbers >= 1 (the MLP's widths, the ConvNet's filters).
std::vector<std::int64_t> positive_list(const train::StoredConfig& config, const json& j, const char* key) {
  if (!j.contains(key) || !j[key].is_array())
    throw std::runtime_error(fmt::format("{}: config's \"{}\": expected a list of numbers", config.file(), key));
  std::vector<std::int64_t> out;
  for (const auto& w : j[key]) {
    if (!w.is_number_integer() || w.get<std::int64_t>() < 1)
      throw std::runtime_error(fmt::format("{}: config's \"{}\": expected numbers >= 1, got {}", config.file(), key,
                                           w.dump()));
    out.push_back(w.get<std::int64_t>());
  }
  return out;
}
}  // namespace

models::ModelSpec model_spec(const train::StoredConfig& config) {
  const json j = json::parse(config.text());
  const std::string model = config.string("model");
  if (model != "mlp" && model != "convnet" && model != "wideresnet")
    throw std::runtime_error(fmt::format("{}: config's \"model\": expected mlp, convnet or wideresnet, got \"{}\"",
                                         config.file(), model));
  models::ModelSpec spec{.name = registry_name(model), .n_classes = config.integer("n_classes"), .layer_widths = {}};
  if (model == "mlp") spec.layer_widths = positive_list(config, j, "layer_widths");
  if (model == "convnet") {
    spec.filters = positive_list(config, j, "filters");
    spec.config.dropout = config.number("dropout", 0.3);
  }
  spec.n_blocks = static_cast<int>(config.integer("n_blocks", 3));
  spec.widen_factor = static_cast<int>(config.integer("widen_factor", 1));
  return spec;
}

Tensor batch_images(const Tensor& images, const std::vector<std::int64_t>& which, std::int64_t side, bool augment,
                    const Rng& rng) {
  const std::int64_t n = static_cast<std::int64_t>(which.size()), rows = images.dim(1), cols = images.dim(2);
  const std::int64_t top = (side - rows) / 2, left = (side - cols) / 2;
  Tensor out = Tensor::zeros({n, side, side, 1});
  const Tensor shifts = augment ? rng.randint({n, 2}, -2, 3) : Tensor();   // dy, dx in −2 … 2
  const Tensor flips = augment ? rng.fold_in(1).randint({n}, 0, 2) : Tensor();
  const float* src = images.data<float>();
  float* dst = out.data<float>();
  for (std::int64_t b = 0; b < n; ++b) {
    const std::int64_t dy = augment ? shifts.data<std::int32_t>()[b * 2] : 0;
    const std::int64_t dx = augment ? shifts.data<std::int32_t>()[b * 2 + 1] : 0;
    const bool flip = augment && flips.data<std::int32_t>()[b] == 1;
    const float* img = src + which[static_cast<std::size_t>(b)] * rows * cols;
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t c = 0; c < cols; ++c) {
        const std::int64_t y = top + r + dy, x = left + (flip ? cols - 1 - c : c) + dx;
        if (y >= 0 && y < side && x >= 0 && x < side) dst[(b * side + y) * side + x] = img[r * cols + c];
      }
  }
  return out;
}

Tensor batch_labels(const Tensor& labels, const std::vector<std::int64_t>& which) {
  Tensor out = Tensor::empty({static_cast<std::int64_t>(which.size())}, DType::int32);
  for (std::size_t i = 0; i < which.size(); ++i)
    out.data<std::int32_t>()[i] = labels.data<std::int32_t>()[which[i]];
  return out;
}

namespace {

struct ImageFlags {
  std::string model = "mlp";
  std::vector<std::int64_t> widths = {512, 512}, filters = {32, 64};
  int n_blocks = 1, widen_factor = 1;
  double dropout = 0.3;
  bool augment = false;
};

int train_command(std::shared_ptr<io::RunLock> lock, examples::TrainFlags t, const ImageFlags& f) {
  examples::open_run(t);
  const data::ImageSet all = data::load_fashion_mnist(t.data, "train");
  const std::int64_t n = all.images.dim(0);
  if (n <= kHeldOut) throw std::runtime_error(fmt::format("{}: {} training images are too few", t.data, n));
  const auto perm = Rng(2017).permutation(n);   // the held-out images: the same for every run and seed
  const std::vector<std::int64_t> valid(perm.end() - kHeldOut, perm.end());
  const std::int64_t n_train = n - kHeldOut, side = side_for(f.model);
  const auto epoch_order = std::make_shared<examples::EpochOrder>(t.seed, n_train);
  const auto train_batch = [&all, perm, n_train, side, t, augment = f.augment, epoch_order](std::int64_t i) {
    // Batch i: a slice of its epoch's permutation of the training images (drop the epoch's remainder).
    const std::int64_t per_epoch = n_train / t.batch_size, epoch = i / per_epoch, at = (i % per_epoch) * t.batch_size;
    const std::vector<std::int64_t>& order = epoch_order->of(epoch);
    std::vector<std::int64_t> which;
    for (std::int64_t k = 0; k < t.batch_size; ++k) which.push_back(perm[static_cast<std::size_t>(order[at + k])]);
    return Stack{batch_images(all.images, which, side, augment, Rng(t.seed).fold_in(1u << 20).fold_in(static_cast<std::uint64_t>(i))),
                 batch_labels(all.labels, which), Tensor::ones({t.batch_size})};
  };
  const std::int64_t eval_batch = 500;
  const auto valid_batch = [&all, valid, side, eval_batch](std::int64_t i) {
    const std::vector<std::int64_t> which(valid.begin() + i * eval_batch, valid.begin() + (i + 1) * eval_batch);
    return Stack{batch_images(all.images, which, side, false, Rng(0)), batch_labels(all.labels, which),
                 Tensor::ones({eval_batch})};
  };
  models::ModelSpec spec{.name = registry_name(f.model), .n_classes = 10, .layer_widths = f.widths, .filters = f.filters,
                         .n_blocks = f.n_blocks, .widen_factor = f.widen_factor};
  spec.config.dropout = f.dropout;
  auto model = models::build(spec, Mode::train);
  fmt::print("{}: {} training images ({} held out), {}×{} pixels; {}{}\n", t.data, n_train, kHeldOut, side, side,
             spec.name, f.augment ? ", augmented (shifts, flips)" : "");
  examples::ModelFlags m;   // config_json stores its "model" and "dropout" (the ConvNet's)
  m.model = f.model;
  m.arch.dropout = f.dropout;
  const json extra = {{"n_classes", 10}, {"layer_widths", f.widths}, {"n_blocks", f.n_blocks},
                      {"widen_factor", f.widen_factor}, {"augment", f.augment}, {"side", side},
                      {"filters", f.filters}};
  train::Loop loop = examples::make_loop(model, m, t,
                                         {.train = train_batch, .eval = valid_batch, .n_eval_batches = kHeldOut / eval_batch},
                                         std::move(lock), examples::config_json(m, t, extra.dump()));
  train::train_until(loop, t.until(train::KeepBest{.metric = "accuracy"}));
  fmt::print("held-out accuracy {:.4f}; run `image eval` for the test split\n", loop.last_value("eval", "accuracy"));
  return 0;
}

}  // namespace

}  // namespace ctrax::examples::image

using namespace ctrax;
using namespace ctrax::examples::image;

int main(int argc, char** argv) {
  CLI::App app{"Classify Fashion-MNIST's pictures of clothes with Trax's MLP, a conv net of Trax's layers, or "
               "Trax's WideResnet."};
  app.require_subcommand(1);
  examples::TrainFlags t{.batch_size = 128, .steps = 5000, .warmup = 200, .eval_every = 500, .lr = 1e-3,
                         .schedule = "cosine", .data = data::kFashionMnistDir, .out = "runs/fashion"};
  ImageFlags f;
  auto* train = app.add_subcommand("train", "train (or resume) a classifier");
  examples::add_train_flags(*train, t, false);
  train->add_option("--model", f.model, "mlp (Trax's MLP), convnet (models/conv_net.hpp) or wideresnet (Trax's "
                    "WideResnet)")->capture_default_str()->check(CLI::IsMember({"mlp", "convnet", "wideresnet"}));
  auto* widths = train->add_option("--widths", f.widths, "mlp: the hidden layers' widths")->delimiter(',')
                     ->capture_default_str()->check(examples::number_in(1, 1 << 20));
  auto* filters = train->add_option("--filters", f.filters, "convnet: each stage's channels")->delimiter(',')
                      ->capture_default_str()->check(examples::number_in(1, 1 << 16));
  auto* dropout = train->add_option("--dropout", f.dropout, "convnet: dropout before the classifier")
                      ->capture_default_str()->check(examples::number_in(0, 0.99));
  auto* blocks = train->add_option("--n-blocks", f.n_blocks, "wideresnet: blocks per group (6n + 4 layers); convnet: "
                                   "convolutions per stage")
                     ->capture_default_str()->check(examples::number_in(1, 100));
  auto* widen = train->add_option("--widen-factor", f.widen_factor, "wideresnet: widening factor k")
                    ->capture_default_str()->check(examples::number_in(1, 16));
  train->add_flag("--augment", f.augment, "shift training images by up to 2 pixels and flip them left-right");

  std::string out = "runs/fashion", data_dir = data::kFashionMnistDir, json_path;
  int threads = 0;
  std::int64_t eval_batch = 500;
  auto* eval = app.add_subcommand("eval", "accuracy on the test split, per class, and the confusion matrix");
  examples::add_use_flags(*eval, out, threads);
  eval->add_option("--data", data_dir, "the Fashion-MNIST directory")->capture_default_str();
  eval->add_option("--batch-size", eval_batch, "images per batch")->capture_default_str()->check(examples::number_in(1, 1 << 20));
  eval->add_option("--json", json_path, "also write the per-class accuracy and confusion matrix here (scripts/plot_confusion.py)");
  examples::decimal_numbers(app);
  CLI11_PARSE(app, argc, argv);

  return examples::run_main("image", [&] {
    if (*train) {
      const bool mlp = f.model == "mlp", cnn = f.model == "convnet", wrn = f.model == "wideresnet";
      for (const auto& [option, applies, needs] :
           {std::tuple{widths, mlp, "mlp"}, std::tuple{filters, cnn, "convnet"}, std::tuple{dropout, cnn, "convnet"},
            std::tuple{blocks, cnn || wrn, "convnet or wideresnet"}, std::tuple{widen, wrn, "wideresnet"}})
        if (option->count() > 0 && !applies)
          throw std::invalid_argument(fmt::format("{} applies to --model {} only (this run: --model {})", option->get_name(),
                                                  needs, f.model));
      t.task = "image";
      auto lock = examples::settle_run(*train, t);
      return train_command(std::move(lock), t, f);
    }
    return eval_command(data_dir, out, threads, eval_batch, json_path);
  });
}
