// examples/seq2seq.hpp — what the sequence-to-sequence examples (translate, chatbot) share: one
// joint SentencePiece vocabulary, an encoder–decoder Transformer trained on (source, target)
// pairs, and decoding with its predict-mode twin.
//
// TRAINING: targets end with EOS (id 1); both sides are cut to --max-len; batches are bucketed by
// length; cross-entropy with label smoothing 0.1 (Trax's recipe), evaluated on held-out pairs
// (loss and token accuracy). DECODING: the source is encoded once, the decoder emits one token at
// a time with its KV caches, greedily or with beam search (core/decode/beam_search.hpp).
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/data/sentencepiece.hpp"
#include "core/data/text_files.hpp"
#include "examples/common.hpp"

namespace ctrax::examples {

// The run's joint vocabulary: learned from both sides of `pairs` on a fresh run (saved as
// OUT/spm.model), loaded when resuming.
std::unique_ptr<data::SentencePieceTokenizer> joint_vocabulary(const std::vector<data::TextPair>& pairs,
                                                               const TrainFlags& t, std::int64_t vocab_size,
                                                               bool resumed);

// Trains models::Transformer (shared embedding) on the pairs; `extra` is merged into the stored
// config (config_json); `keep_best` picks best.safetensors by held-out "loss" or "accuracy".
// With `pretrained` weights (settle_pretrained; none on a resume) the encoder starts from a
// pretrained body (models::MaskedLMBodyInTransformer, through Pretrained::body_maps), the decoder
// from its initialisation. Prints the final validation loss and token accuracy.
void train_seq2seq(std::shared_ptr<io::RunLock> lock, const ModelFlags& m, const TrainFlags& t,
                   const data::SentencePieceTokenizer& tok, const std::vector<data::TextPair>& train_pairs,
                   const std::vector<data::TextPair>& val_pairs, const std::string& extra,
                   const train::KeepBest& keep_best, const std::optional<Pretrained>& pretrained = std::nullopt);

// The predict-mode model of a run directory with its trained weights and tokenizer.
// What the attention read: the greedy translation of one sentence, its pieces, and the weight
// each target piece (rows; the last is EOS) gave each source piece (columns). For a Transformer,
// the last decoder block's cross-attention: `heads` holds each head's map and `weights` their mean.
struct Alignment {
  std::string translation = "";
  std::vector<std::string> source = {}, target = {};
  std::vector<std::vector<double>> weights = {};
  std::vector<std::vector<std::vector<double>>> heads = {};
};

class Seq2Seq {
 public:
  // The run in `out`, trained by `task` ("translate" or "chatbot").
  Seq2Seq(const std::string& out, const std::string& task);
  // Decodes a batch of sources; n_beams 1 is greedy. Beam search ranks finished hypotheses by
  // log p / length^length_penalty.
  std::vector<std::string> operator()(const std::vector<std::string>& sources, std::int64_t n_beams,
                                      double length_penalty);
  // Translates greedily, then reads the attention of the eval-mode model on (source, translation):
  // LSTMSeq2SeqAttn's α (needs a --score), or a Transformer's last cross-attention, per head.
  Alignment align(const std::string& source);

  // A source longer than the model's positions (the run's --max-len) is read up to there: the rest
  // is left out of its translation. Says so on stderr for each such source, as "<what> is N tokens
  // long" (`what`: "TEXT 2 of 3", "line 7"); say_cut_count counts them in one line (`many`: "test
  // sentences", the sources of a test set).
  void say_cut(const std::vector<std::string>& sources, const std::vector<std::string>& what) const;
  void say_cut_count(const std::vector<std::string>& sources, const std::string& many) const;

 private:
  Seq2Seq(const train::StoredConfig& config, const std::string& task);   // the run's config, read once
  std::string task_;
  std::string weights_;   // first: a directory without a model, or another program's, says so first
  ModelFlags m_;
  std::unique_ptr<data::SentencePieceTokenizer> tok_;
  LayerPtr model_;
};

inline constexpr const char* kLengthPenaltyHelp =
    "beam search ranks finished outputs by log p / length^this (0: raw log p, short ones win)";

}  // namespace ctrax::examples
