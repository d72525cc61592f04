// examples/inspect.cpp — print a model's tree, its weights and, with --trace, its data stack.
//
//   build/examples/inspect TransformerLM --vocab-size 256 --d-model 64 --n-layers 2 --trace
//
// MODEL is TransformerEncoder, TransformerLM or Transformer — every size defaults to Trax's
// (d_model 512, d_ff 2048, 6 layers, 8 heads, max_len 2048) — or one of Trax's recurrent models,
// RNNLM (--cell lstm|gru), GRULM or LSTMSeq2SeqAttn (--score for the notes' RNN attention), with
// Trax's defaults for them (2 layers; GRULM 1; 1 attention head) unless --n-layers/--n-heads say. The output is the model tree in
// Trax's format, a table of the weights of each layer ending in `total parameters: N`, and with
// --trace every layer in execution order with the stack before and after it, for a random batch
// of 2 sequences (the encoder's second sequence ends in padding). SentenceCNN (--n-filters) reads
// tokens too; the image models read a batch of 2 grey images: MLP (--widths, 28×28), ConvNet
// (--filters, --n-blocks convolutions per stage, 28×28) and WideResnet (--n-blocks,
// --widen-factor, 32×32), --n-classes logits.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>

#include "core/layer/summary.hpp"
#include "core/tensor/blas_kernels.hpp"
#include "core/tensor/runtime.hpp"
#include "core/layer/trace.hpp"
#include "examples/common.hpp"
#include "examples/flags.hpp"
#include "models/registry.hpp"

using namespace ctrax;

namespace {

// Random token ids in [1, vocab) of shape (B, L); the last `n_pad` of row 1 are padding (0).
Tensor random_tokens(std::int64_t B, std::int64_t L, std::int64_t vocab, std::int64_t n_pad,
                     std::uint64_t seed) {
  Tensor t = Rng(seed).randint({B, L}, 1, static_cast<std::int32_t>(vocab));
  auto* p = t.data<std::int32_t>();
  for (std::int64_t i = L - n_pad; i < L; ++i) p[(B - 1) * L + i] = 0;
  return t;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"Print a ctrax Transformer: its tree, its weights, and the data stack (--trace)."};
  std::string model_name;
  std::int64_t vocab_size = 32000, n_classes = 10;
  std::optional<std::int64_t> output_vocab_size;
  examples::ModelFlags m;   // Trax's defaults (d_model 512, d_ff 2048, 6 layers, 8 heads, max_len 2048)
  std::string mode = "train";
  bool trace = false;
  bool blas_info = false;
  app.add_option("MODEL", model_name,
                 "TransformerEncoder, TransformerLM, Transformer, RNNLM, GRULM, LSTMSeq2SeqAttn, SentenceCNN, MLP, "
                 "ConvNet or WideResnet (required unless --blas)")
      ->check(CLI::IsMember(models::model_names()));
  app.add_option("--vocab-size", vocab_size, "vocabulary size (Transformer: the input's)")
      ->capture_default_str()->check(examples::number_in(2, 1e6));
  app.add_option("--output-vocab-size", output_vocab_size,
                 "Transformer only: target vocabulary (default: shared with the input)")
      ->check(examples::number_in(2, 1e6));
  app.add_option("--n-classes", n_classes, "TransformerEncoder, SentenceCNN and the image models: classes")->capture_default_str()
      ->check(examples::number_in(2, 1e6));
  examples::add_model_flags(app, m);
  app.add_option("--mode", mode, "train, eval or predict")
      ->check(CLI::IsMember({"train", "eval", "predict"}))
      ->capture_default_str();
  std::string cell = "lstm", score;
  app.add_option("--cell", cell, "RNNLM only: lstm or gru cells")->check(CLI::IsMember({"lstm", "gru"}))->capture_default_str();
  app.add_option("--score", score, "LSTMSeq2SeqAttn only: dot, scaled_dot, general, additive or location "
                 "(default: Trax's AttentionQKV)")
      ->check(CLI::IsMember({"dot", "scaled_dot", "general", "additive", "location"}));
  models::ModelSpec image;   // the registry's defaults for SentenceCNN and the image models
  app.add_option("--n-filters", image.n_filters, "SentenceCNN only: filters of each width (3, 4, 5)")->capture_default_str()
      ->check(examples::number_in(1, 1e5));
  app.add_option("--widths", image.layer_widths, "MLP only: the hidden layers' widths")->delimiter(',')->capture_default_str()
      ->check(examples::number_in(1, 1 << 20));
  app.add_option("--filters", image.filters, "ConvNet only: each stage's channels")->delimiter(',')->capture_default_str()
      ->check(examples::number_in(1, 1 << 16));
  app.add_option("--n-blocks", image.n_blocks, "WideResnet: blocks per group; ConvNet: convolutions per stage")
      ->capture_default_str()
      ->check(examples::number_in(1, 100));
  app.add_option("--widen-factor", image.widen_factor, "WideResnet only: widening factor")->capture_default_str()
      ->check(examples::number_in(1, 16));
  app.add_flag("--trace", trace, "run a tiny random batch and print the stack around every layer");
  app.add_flag("--blas", blas_info,
               "print which OpenBLAS kernels run and whether they fit this CPU (core/tensor/blas_kernels.hpp)");
  examples::decimal_numbers(app);
  CLI11_PARSE(app, argc, argv);
  if (blas_info) {
    const blas::KernelCheck k = blas::check_kernels();
    fmt::print("openblas core: {}{}\ncpu supports: {}\nthreads: {} (CTRAX_NUM_THREADS; OpenBLAS runs 1)\n", k.core,
               k.forced ? " (OPENBLAS_CORETYPE set)" : "", k.cpu_best.empty() ? "no AVX2" : k.cpu_best, num_threads());
    if (!k.suggested.empty()) fmt::print("suggest: OPENBLAS_CORETYPE={}\n", k.suggested);
    return 0;
  }
  if (model_name.empty()) {
    fmt::print(stderr, "MODEL is required ({})\nRun with --help for more information.\n",
               fmt::join(models::model_names(), ", "));
    return 106;
  }

  const models::TransformerConfig c = m.config(mode == "train" ? Mode::train : mode == "eval" ? Mode::eval : Mode::predict);
  const bool predict = c.mode == Mode::predict;
  const std::int64_t B = 2, L = std::min<std::int64_t>(8, c.max_len);
  const std::int64_t L_dec = predict ? 1 : std::min<std::int64_t>(6, c.max_len);
  const std::int64_t out_vocab = output_vocab_size.value_or(vocab_size);

  try {
    // Through the registry (models/registry.hpp), with Trax's defaults for the recurrent models
    // where the flags are not given: 2 layers (GRULM 1), 1 attention head.
    models::ModelSpec spec = m.spec(model_name, vocab_size);
    spec.config = c;
    spec.output_vocab_size = output_vocab_size;
    spec.n_classes = n_classes;
    spec.cell = cell;
    spec.score = score.empty() ? std::nullopt : std::optional(layers::parse_score(score));
    const bool recurrent = model_name == "RNNLM" || model_name == "GRULM" || model_name == "LSTMSeq2SeqAttn";
    if (recurrent && !app.count("--n-layers")) spec.config.n_layers = model_name == "GRULM" ? 1 : 2;
    if (model_name == "LSTMSeq2SeqAttn" && !app.count("--n-heads")) spec.config.n_heads = 1;
    if (model_name == "LSTMSeq2SeqAttn") spec.config.dropout = 0;   // Trax's attention_dropout
    spec.n_filters = image.n_filters;
    spec.layer_widths = image.layer_widths;
    spec.n_blocks = image.n_blocks;
    spec.filters = image.filters;
    spec.widen_factor = image.widen_factor;
    if (model_name == "SentenceCNN" && !app.count("--d-model")) spec.config.d_model = 128;   // its embeddings
    if (model_name == "SentenceCNN" && !app.count("--dropout")) spec.config.dropout = 0.5;   // Kim's
    if (model_name == "ConvNet" && !app.count("--dropout")) spec.config.dropout = 0.3;       // ConvNetOptions'
    if (model_name == "ConvNet" && !app.count("--n-blocks")) spec.n_blocks = 2;
    const LayerPtr model = models::build(spec, c.mode);
    const bool two_inputs = model_name == "Transformer" || model_name == "LSTMSeq2SeqAttn";
    const bool padded = two_inputs || model_name == "TransformerEncoder";   // the encoder's 2nd row ends in padding
    const std::int64_t L_in = model_name == "TransformerEncoder" || two_inputs ? L : predict ? 1 : L;
    const bool images = model_name == "MLP" || model_name == "ConvNet" || model_name == "WideResnet";
    const std::int64_t side = model_name == "WideResnet" ? 32 : 28;
    Stack batch = {images ? Rng(1).normal({B, side, side, 1})
                          : random_tokens(B, model_name == "SentenceCNN" ? 16 : L_in, vocab_size, padded ? L / 4 : 0, 1)};
    if (two_inputs) batch.push_back(random_tokens(B, L_dec, out_vocab, 0, 2));
    model->init(signature_of(batch), Rng(0));
    std::cout << model->to_string() << "\n\n" << summary(*model);
    if (trace) {
      Trace t;
      (*model)(batch);
      std::cout << fmt::format("\nTrace: one forward pass in {} mode on a random batch {}\n",
                               mode, signatures(batch))
                << t.to_string();
    }
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return 1;
  }
  return 0;
}
