#include "models/electra.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>

#include "core/engine/fast_exp.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/dispatch.hpp"
#include "core/tensor/ops.hpp"
#include "layers/layers.hpp"

namespace ctrax::models {

using namespace ctrax::layers;

namespace {

// logits (B, P, V) → int32 (B, P): a token per row drawn from softmax(logits) over the ids
// [first, V), by inverting the cumulative distribution at one uniform number per row (the rng's
// draw, so data-parallel processes draw what one process would, row for row).
class SampleTokens final : public Layer {
 public:
  SampleTokens(std::int32_t first, std::source_location created) : Layer("SampleTokens", 1, 1, created), first_(first) {}

 protected:
  Stack forward(const Stack& inputs) override {
    const Tensor& logits = inputs[0];
    if (logits.rank() != 3)
      throw std::invalid_argument(fmt::format("SampleTokens: logits must be (batch, positions, vocabulary), got {}",
                                              logits.signature()));
    const std::int64_t B = logits.dim(0), P = logits.dim(1), V = logits.dim(2);
    if (first_ < 0 || first_ >= V)
      throw std::invalid_argument(fmt::format("SampleTokens: the first id a sample may take is {}, outside the "
                                              "vocabulary of {} the logits {} have", first_, V, logits.signature()));
    if (logits.is_meta()) return {Tensor::meta({B, P}, DType::int32)};
    const Tensor u = rng().uniform({B, P}, 0.0, 1.0, DType::float64);
    Tensor out = Tensor::empty({B, P}, DType::int32);
    const double* uu = u.data<double>();
    std::int32_t* o = out.data<std::int32_t>();
    dispatch_float(logits.dtype(), [&]<class T>(T) {
      const T* x = logits.data<T>();
      parallel_chunks(B * P, B * P * V >= (1 << 15), [&](std::int64_t r0, std::int64_t r1) {
        const std::int64_t n = V - first_;
        std::vector<T> buffer(static_cast<std::size_t>(n));
        T* const p = buffer.data();
        for (std::int64_t r = r0; r < r1; ++r) {
          const T* row = x + r * V + first_;
          T top = row[0];
  #pragma omp simd reduction(max : top)
          for (std::int64_t k = 1; k < n; ++k) top = row[k] > top ? row[k] : top;
          // e^(x − max) in vector lanes (fast_exp.hpp: a vocabulary of 8,000 is 8,000 exps a
          // position), summed in double.
          double total = 0;
  #pragma omp simd reduction(+ : total)
          for (std::int64_t k = 0; k < n; ++k) {
            p[k] = exp_nonpositive(row[k] - top);
            total += p[k];
          }
          const double goal = uu[r] * total;
          std::int64_t k = 0;
          for (double seen = p[0]; seen <= goal && k + 1 < n; seen += p[k]) ++k;
          o[r] = static_cast<std::int32_t>(first_ + k);
        }
      });
    }, "SampleTokens");
    return {out};
  }

 private:
  std::int32_t first_;
};

// (samples (B, P), inputs (B, L), positions (B, P), targets (B, P), weights (B, P)) →
// (the inputs with each weighted position's token replaced by its sample (B, L) int32,
//  replaced (B, L): 1 where that token now differs from the original, real (B, L): 1 off padding).
// Padding is token id 0, as PaddingMask takes it by default (layers/masks.hpp).
// Integers in, integers and 0/1 out: nothing here has a gradient.
Stack replace_tokens(const Stack& in) {
  const Tensor &samples = in[0], &tokens = in[1], &positions = in[2], &targets = in[3], &weights = in[4];
  const std::int64_t B = tokens.dim(0), L = tokens.dim(1), P = positions.dim(1);
  for (const Tensor* t : {&samples, &positions, &targets, &weights})
    if (t->rank() != 2 || t->dim(0) != B || t->dim(1) != P)
      throw std::invalid_argument(fmt::format("ReplaceTokens: samples, positions, targets and weights must all be "
                                              "(batch, positions) = ({}, {}), got {}", B, P, signatures(in)));
  if (tokens.is_meta() || samples.is_meta())
    return {Tensor::meta({B, L}, DType::int32), Tensor::meta({B, L}, weights.dtype()), Tensor::meta({B, L}, weights.dtype())};
  Tensor x = tokens.to(DType::int32).clone();
  Tensor replaced = Tensor::zeros({B, L}, DType::float64);
  Tensor real = not_equal(tokens, Tensor::scalar(0, tokens.dtype())).to(DType::float64);
  const auto s = samples.to_vector<std::int32_t>(), at = positions.to_vector<std::int32_t>(),
             tgt = targets.to_vector<std::int32_t>();
  const auto w = weights.to_vector<double>();
  std::int32_t* xs = x.data<std::int32_t>();
  double* rep = replaced.data<double>();
  for (std::int64_t b = 0; b < B; ++b)
    for (std::int64_t p = 0; p < P; ++p) {
      const auto k = static_cast<std::size_t>(b * P + p);
      if (w[k] == 0) continue;
      if (at[k] < 0 || at[k] >= L)
        throw std::invalid_argument(fmt::format("ReplaceTokens: position {} of row {} is outside the {} tokens", at[k], b, L));
      xs[b * L + at[k]] = s[k];
      rep[b * L + at[k]] = s[k] != tgt[k];
    }
  return {x, replaced.to(weights.dtype()), real.to(weights.dtype())};
}

void check_detection(const char* who, const Tensor& logits, const Tensor& replaced, const Tensor& real) {
  if (replaced.shape() != logits.shape() || real.shape() != logits.shape())
    throw std::invalid_argument(fmt::format("{}: the discriminator's logits {}, replaced {} and real {} must have one shape",
                                            who, logits.signature(), replaced.signature(), real.signature()));
}

}  // namespace

TransformerConfig ElectraGenerator(const TransformerConfig& d, double size) {
  if (!(size > 0 && size <= 1))
    throw std::invalid_argument(fmt::format("ElectraGenerator: the generator's size is a share of the discriminator's "
                                            "width in (0, 1], got {}", size));
  TransformerConfig g = d;
  g.d_model = std::max<std::int64_t>(1, std::llround(static_cast<double>(d.d_model) * size));
  g.d_ff = std::max<std::int64_t>(1, std::llround(static_cast<double>(d.d_ff) * size));
  g.n_heads = 1;
  for (int h = 1; h <= d.n_heads; ++h)   // the fewest heads of at most 64 features each (BERT's head width)
    if (g.d_model % h == 0 && g.d_model / h <= 64) { g.n_heads = h; break; }
  return g;
}

LayerPtr ElectraPretraining(std::int64_t vocab_size, const TransformerConfig& discriminator,
                            const TransformerConfig& generator, std::int32_t first_sample_id) {
  LayerList detector = EncoderBody(vocab_size, discriminator);   // tokens → hidden (B, L, d)
  detector.push_back(Dense(1));                                  // a logit per position (B, L, 1)
  detector.push_back(Fn("Squeeze", [](TensorArg x) { return squeeze(x, -1); }));   // (B, L)
  return Serial(
      Select({0, 1, 0, 1, 2, 3}),                                             // tok pos tok pos tgt w
      MaskedLM(vocab_size, generator),                                        // g tok pos tgt w
      Select({0, 3, 4, 0, 1, 2, 3, 4}),                                       // g tgt w g tok pos tgt w
      Parallel(nullptr, nullptr, nullptr, std::make_shared<SampleTokens>(first_sample_id, std::source_location::current())),
      Parallel(nullptr, nullptr, nullptr, FnStack("ReplaceTokens", 5, 3, replace_tokens)),   // g tgt w x replaced real
      Parallel(nullptr, nullptr, nullptr, Serial(detector)));                // g tgt w d replaced real
}

LayerPtr ElectraLoss(double lambda) {
  const LayerPtr detection = Fn("ReplacedTokenCrossEntropy", [](TensorArg logits, TensorArg replaced, TensorArg real) {
    check_detection("ReplacedTokenCrossEntropy", logits, replaced, real);
    return weighted_mean(softplus(logits) - replaced.to(logits.dtype()) * logits, real);   // −[t log σ(x) + (1 − t) log(1 − σ(x))]
  });
  return Serial(Parallel(WeightedCategoryCrossEntropy(), detection),
                Fn("ElectraLoss", [lambda](TensorArg generator, TensorArg detector) { return generator + lambda * detector; }));
}

LayerPtr ReplacedTokenAccuracy() {
  return Serial(Select({3, 4, 5}, 6),
                Fn("ReplacedTokenAccuracy", [](TensorArg logits, TensorArg replaced, TensorArg real) {
                  check_detection("ReplacedTokenAccuracy", logits, replaced, real);
                  const Tensor said = greater(logits, Tensor::scalar(0, logits.dtype())).to(logits.dtype());
                  return weighted_mean(equal(said, replaced.to(logits.dtype())).to(logits.dtype()), real);
                }));
}

std::vector<train::WeightMap> electra_body_maps(std::vector<train::WeightMap> maps) {
  const std::string root = "Serial/";
  for (auto& m : maps) {
    if (m.from.empty() && m.to.empty()) {
      m = {.from = kElectraDiscriminator, .to = root};
      continue;
    }
    if (m.from.rfind(root, 0) != 0)
      throw std::invalid_argument(fmt::format("electra_body_maps: a masked LM's weight names start with {}, not {}", root, m.from));
    m.from = kElectraDiscriminator + m.from.substr(root.size());
  }
  return maps;
}

}  // namespace ctrax::models
