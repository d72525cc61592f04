// examples/image_use.cpp — `image eval`: a trained run on Fashion-MNIST's 10,000 test images, its
// accuracy per class and the confusion matrix (image.cpp trains it).
#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/io/atomic_file.hpp"
#include "core/tensor/autodiff.hpp"
#include "core/tensor/ops.hpp"
#include "core/train/checkpoint.hpp"
#include "examples/common.hpp"
#include "examples/image.hpp"

namespace ctrax::examples::image {

int eval_command(const std::string& data_dir, const std::string& out, int threads, std::int64_t batch_size,
                 const std::string& json_path) {
  examples::apply_threads(threads);
  const train::StoredConfig config = train::StoredConfig::of_run(out);
  const std::string weights = train::weights_to_use(config, "image");
  const models::ModelSpec spec = model_spec(config);
  const std::int64_t side = side_for(config.string("model"));
  LayerPtr model = models::build(spec, Mode::eval);
  model->init(ShapeDtype{{1, side, side, 1}});
  train::load_weights(weights, *model);   // with BatchNorm's running statistics
  const data::ImageSet test = data::load_fashion_mnist(data_dir, "test");
  const std::int64_t n = test.images.dim(0), k = spec.n_classes;
  std::vector<std::vector<std::int64_t>> confusion(static_cast<std::size_t>(k), std::vector<std::int64_t>(static_cast<std::size_t>(k), 0));
  model->check_call_fits({ShapeDtype{{std::min(n, batch_size), side, side, 1}}});   // the largest batch
  NoGrad no_grad;
  for (std::int64_t start = 0; start < n; start += batch_size) {
    std::vector<std::int64_t> which;
    for (std::int64_t i = start; i < std::min(n, start + batch_size); ++i) which.push_back(i);
    const Tensor predicted = argmax((*model)(Stack{batch_images(test.images, which, side, false, Rng(0))})[0], -1);
    for (std::size_t i = 0; i < which.size(); ++i) {
      const auto truth = static_cast<std::size_t>(test.labels.data<std::int32_t>()[which[i]]);
      ++confusion[truth][static_cast<std::size_t>(predicted.data<std::int32_t>()[i])];
    }
  }
  std::int64_t correct = 0;
  std::vector<double> per_class;
  fmt::print("{:<12} {:>9}   (test split, {} images; rows: the truth, counted by what the model said)\n", "class",
             "accuracy", n);
  for (std::int64_t c = 0; c < k; ++c) {
    std::int64_t total = 0;
    for (std::int64_t p : confusion[static_cast<std::size_t>(c)]) total += p;
    const std::int64_t right = confusion[static_cast<std::size_t>(c)][static_cast<std::size_t>(c)];
    correct += right;
    per_class.push_back(total ? static_cast<double>(right) / static_cast<double>(total) : 0.0);
    fmt::print("{:<12} {:>8.2f}%\n", data::kFashionMnistClasses[static_cast<std::size_t>(c)], 100 * per_class.back());
  }
  const double accuracy = static_cast<double>(correct) / static_cast<double>(n);
  fmt::print("test accuracy {:.4f} ({} of {} images) — {} from {}\n", accuracy, correct, n, spec.name, weights);
  if (!json_path.empty()) {
    const nlohmann::json j = {{"model", spec.name}, {"weights", weights}, {"accuracy", accuracy},
                              {"classes", data::kFashionMnistClasses}, {"per_class", per_class},
                              {"confusion", confusion}};
    io::write_atomically(json_path, j.dump(1) + "\n");
    fmt::print("wrote {}\n", json_path);
  }
  return 0;
}

}  // namespace ctrax::examples::image
