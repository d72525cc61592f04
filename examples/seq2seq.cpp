#include "examples/seq2seq.hpp"

#include <fmt/format.h>

#include <filesystem>

#include "core/data/batching.hpp"
#include "core/decode/beam_search.hpp"
#include "core/decode/sampling.hpp"
#include "core/train/checkpoint.hpp"
#include "core/train/loop.hpp"
#include "layers/attention_weights.hpp"
#include "models/transformer.hpp"

namespace ctrax::examples {

namespace {

struct EncodedPairs {
  std::shared_ptr<data::Sequences> source = std::make_shared<data::Sequences>();
  std::shared_ptr<data::Sequences> target = std::make_shared<data::Sequences>();
};

// Sources as they are, targets with EOS; both cut to max_len.
EncodedPairs encode(const data::Tokenizer& tok, const std::vector<data::TextPair>& pairs, std::int64_t max_len) {
  EncodedPairs e;
  for (const auto& p : pairs) {
    auto s = tok.encode(p.source), t = tok.encode(p.target);
    t.push_back(data::kEosId);
    if (static_cast<std::int64_t>(s.size()) > max_len) s.resize(static_cast<std::size_t>(max_len));
    if (static_cast<std::int64_t>(t.size()) > max_len) t.resize(static_cast<std::size_t>(max_len));
    e.source->push_back(std::move(s));
    e.target->push_back(std::move(t));
  }
  return e;
}

}  // namespace


std::unique_ptr<data::SentencePieceTokenizer> joint_vocabulary(const std::vector<data::TextPair>& pairs,
                                                               const TrainFlags& t, std::int64_t vocab_size,
                                                               bool resumed) {
  return run_vocabulary(t, resumed, {.vocab_size = vocab_size}, "both sides (one joint vocabulary)", [&] {
    std::vector<std::string> sentences;
    for (const auto& p : pairs) {
      sentences.push_back(p.source);
      sentences.push_back(p.target);
    }
    return sentences;
  });
}

void train_seq2seq(std::shared_ptr<io::RunLock> lock, const ModelFlags& m, const TrainFlags& t,
                   const data::SentencePieceTokenizer& tok, const std::vector<data::TextPair>& train_pairs,
                   const std::vector<data::TextPair>& val_pairs, const std::string& extra,
                   const train::KeepBest& keep_best, const std::optional<Pretrained>& pretrained) {
  const auto train = encode(tok, train_pairs, m.arch.max_len), val = encode(tok, val_pairs, m.arch.max_len);
  const data::PadOptions pad{.max_len = m.arch.max_len, .pad_multiple = 4};
  auto model = m.seq2seq_model(tok.vocab_size(), Mode::train);
  if (pretrained && !pretrained->weights.empty()) {   // the encoder's weights now; the Loop's initialisation keeps them
    const ShapeDtype tokens{{t.batch_size, m.arch.max_len}, DType::int32};
    model->init(Signature{tokens, tokens}, Rng(t.seed).fold_in(7));
    const train::LoadReport report = train::load_matching_weights(
        pretrained->weights, *model, pretrained->body_maps(models::MaskedLMBodyInTransformer(tok.vocab_size(), m.config(Mode::train))));
    fmt::print("from {}: {}\n", pretrained->weights, report.describe());
  }
  const auto n_val = static_cast<std::int64_t>(val_pairs.size());
  train::Loop loop = make_loop(
      model, m, t,
      {.train = data::seq2seq_stream(train.source, train.target,
                                     {.batch_size = t.batch_size, .seed = t.seed, .bucket_size = 32}, pad),
       .eval = data::seq2seq_stream(val.source, val.target,
                                    {.batch_size = t.batch_size, .shuffle = false, .bucket_size = 1000,
                                     .drop_remainder = false}, pad),
       .n_eval_batches = (n_val + t.batch_size - 1) / t.batch_size,
       .label_smoothing = 0.1},
      std::move(lock), config_json(m, t, extra));
  train::train_until(loop, t.until(keep_best));
  fmt::print("validation loss {:.4f}, token accuracy {:.4f}\n", loop.last_value("eval", "loss"),
             loop.last_value("eval", "accuracy"));
}

Seq2Seq::Seq2Seq(const std::string& out, const std::string& task) : Seq2Seq(train::StoredConfig::of_run(out), task) {}

Seq2Seq::Seq2Seq(const train::StoredConfig& config, const std::string& task)
    : task_(task), weights_(train::weights_to_use(config, task)), m_(model_flags_from(config)),
      tok_(data::SentencePieceTokenizer::load(train::vocabulary_file(config.run()))) {
  model_ = m_.seq2seq_model(tok_->vocab_size(), Mode::predict);
  model_->init({ShapeDtype{{1, 8}, DType::int32}, ShapeDtype{{1, 1}, DType::int32}});
  train::load_weights(weights_, *model_);
}

std::vector<std::string> Seq2Seq::operator()(const std::vector<std::string>& sources, std::int64_t n_beams,
                                             double length_penalty) {
  data::Sequences rows;
  std::int64_t L = 1;
  for (const auto& s : sources) {
    rows.push_back(tok_->encode(s));
    if (static_cast<std::int64_t>(rows.back().size()) > m_.arch.max_len) rows.back().resize(static_cast<std::size_t>(m_.arch.max_len));
    L = std::max<std::int64_t>(L, static_cast<std::int64_t>(rows.back().size()));
  }
  const Tensor source = data::pad_rows(rows, L);
  // Room for a target somewhat longer than the source, within the model's positions.
  const std::int64_t max_length = std::min<std::int64_t>(m_.arch.max_len - 1, 2 * L + 10);
  std::vector<std::string> out;
  if (n_beams <= 1) {
    const Tensor gen = decode::autoregressive_sample(*model_, source, 0, {.temperature = 0, .max_length = max_length});
    const auto T = gen.shape()[1];
    for (std::int64_t b = 0; b < gen.shape()[0]; ++b)
      out.push_back(tok_->decode(std::span(gen.data<std::int32_t>() + b * T, static_cast<std::size_t>(T))));
  } else {
    const auto beams =
        decode::beam_search(*model_, source, 0, {.n_beams = n_beams, .max_length = max_length, .length_penalty = length_penalty});
    for (const auto& hyps : beams) out.push_back(tok_->decode(hyps.front().tokens));
  }
  return out;
}

void Seq2Seq::say_cut(const std::vector<std::string>& sources, const std::vector<std::string>& what) const {
  for (std::size_t i = 0; i < sources.size(); ++i)
    examples::say_cut(task_, what.at(i), static_cast<std::int64_t>(tok_->encode(sources[i]).size()), m_.arch.max_len);
}

void Seq2Seq::say_cut_count(const std::vector<std::string>& sources, const std::string& many) const {
  std::size_t cut = 0;
  for (const auto& s : sources) cut += static_cast<std::int64_t>(tok_->encode(s).size()) > m_.arch.max_len;
  if (cut > 0)
    fmt::print(stderr, "{}: {} of the {} {} are longer than the {} tokens the model reads (the run's --max-len): their "
               "translations leave the rest out\n", task_, cut, sources.size(), many, m_.arch.max_len);
}

Alignment Seq2Seq::align(const std::string& source) {
  auto ids = tok_->encode(source);
  if (static_cast<std::int64_t>(ids.size()) > m_.arch.max_len) ids.resize(static_cast<std::size_t>(m_.arch.max_len));
  const auto Ls = static_cast<std::int64_t>(ids.size());
  const Tensor src = data::pad_rows(data::Sequences{ids}, std::max<std::int64_t>(Ls, 1));
  const bool lstm = m_.model == "lstm";
  auto reader = m_.seq2seq_model(tok_->vocab_size(), Mode::eval, /*attention_weights=*/lstm);   // checks first
  const Tensor gen = decode::autoregressive_sample(*model_, src, 0,
                                                   {.temperature = 0, .max_length = std::min<std::int64_t>(m_.arch.max_len - 1, 2 * Ls + 10)});
  std::vector<std::int32_t> out;   // the translation, up to and with its EOS
  for (std::int64_t t = 0; t < gen.dim(1); ++t) {
    const std::int32_t id = gen.data<std::int32_t>()[t];
    if (id == data::kPadId) break;
    out.push_back(id);
    if (id == data::kEosId) break;
  }
  if (out.empty()) out.push_back(data::kEosId);
  const auto Lt = static_cast<std::int64_t>(out.size());
  const Tensor tgt = data::pad_rows(data::Sequences{out}, Lt);
  reader->init(signature_of(Stack{src, tgt}));
  reader->set_all_weights(model_->all_weights());
  Alignment a{.translation = tok_->decode(out)};
  for (std::int32_t id : ids) a.source.push_back(tok_->piece(id));
  for (std::int32_t id : out) a.target.push_back(id == data::kEosId ? "</s>" : tok_->piece(id));
  // (H, Lt, L_k) maps: LSTMSeq2SeqAttn's one α, or the Transformer's last cross-attention's heads.
  const Tensor maps = lstm ? (*reader)(Stack{src, tgt})[2]
                           : layers::attention_weights(*reader, {src, tgt}, m_.arch.n_heads).back().weights;
  const Tensor alpha = maps.to(DType::float64);
  const std::int64_t H = lstm ? 1 : alpha.dim(1), Lk = alpha.dim(-1);
  const double* p = alpha.data<double>();
  a.weights.assign(static_cast<std::size_t>(Lt), std::vector<double>(static_cast<std::size_t>(Ls), 0.0));
  for (std::int64_t h = 0; h < H; ++h) {
    std::vector<std::vector<double>> head;
    for (std::int64_t t = 0; t < Lt; ++t) {
      const double* row = p + (h * Lt + t) * Lk;
      head.emplace_back(row, row + Ls);
      for (std::int64_t j = 0; j < Ls; ++j) a.weights[static_cast<std::size_t>(t)][static_cast<std::size_t>(j)] += row[j] / static_cast<double>(H);
    }
    if (!lstm) a.heads.push_back(std::move(head));
  }
  return a;
}

}  // namespace ctrax::examples
