#include "core/decode/beam_search.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>

#include "core/decode/internal/packed_weights.hpp"
#include "core/decode/internal/token_program.hpp"
#include "core/decode/sampling.hpp"
#include "core/engine/parallel.hpp"
#include "core/tensor/ops.hpp"

namespace ctrax::decode {
namespace {

constexpr double minus_infinity = -std::numeric_limits<double>::infinity();

// Repeats each row of x (B, ...) k times: row b·k + j = x[b].
Tensor repeat_rows(const Tensor& x, std::int64_t k) {
  if (!x.defined() || k == 1) return x;
  std::vector<std::int64_t> from(static_cast<std::size_t>(x.dim(0) * k));
  for (std::size_t r = 0; r < from.size(); ++r) from[r] = static_cast<std::int64_t>(r) / k;
  return gather_rows(x, from, x.dim(0));
}

double normalised(double log_prob, std::size_t length, double penalty) {
  return penalty == 0 ? log_prob : log_prob / std::pow(static_cast<double>(length), penalty);
}

struct Beam {
  std::vector<std::int32_t> tokens;
  double log_prob = minus_infinity;
};

}  // namespace

std::vector<std::vector<Hypothesis>> beam_search(Layer& model, const Tensor& inputs,
                                                 std::int64_t batch_size,
                                                 const BeamSearchOptions& o) {
  if (o.n_beams < 1 || o.max_length < 1)
    throw std::invalid_argument("beam_search: n_beams and max_length must be >= 1");
  const std::int64_t K = o.n_beams;
  const std::int64_t B = inputs.defined() ? inputs.dim(0) : batch_size;
  const std::int64_t rows = B * K;
  const bool lm = model.n_in() == 1;
  const Tensor source = repeat_rows(inputs, K);
  start_decoding(model, lm ? Tensor() : source, rows);

  Tensor tokens = column(std::vector<std::int32_t>(static_cast<std::size_t>(rows), o.start_id));
  if (lm && inputs.defined()) tokens = concatenate({tokens, source}, 1);
  std::vector<Beam> beams(static_cast<std::size_t>(rows));
  for (std::int64_t b = 0; b < B; ++b) beams[b * K].log_prob = 0;  // one live beam to start
  std::vector<std::vector<Hypothesis>> finished(static_cast<std::size_t>(B));
  std::vector<bool> done(static_cast<std::size_t>(B), false);

  // One parallel region for the whole search, the weights packed once, as autoregressive_sample
  // (sampling.cpp).
  const PackedWeights packed(model, o.pack_weights);
  const std::unique_ptr<TokenProgram> program = lm ? TokenProgram::compile(model, rows) : nullptr;   // sampling.cpp
  in_one_region([&] {
    for (std::int64_t t = 0; t < o.max_length; ++t) {
      const Tensor logp = next_token_log_probs(program.get(), model, lm ? Tensor() : source, tokens);
      const std::int64_t V = logp.dim(1);
      const double* lp = logp.data<double>();
      std::vector<Beam> next(static_cast<std::size_t>(rows));
      std::vector<std::int64_t> parent(static_cast<std::size_t>(rows));
      for (std::int64_t b = 0; b < B; ++b) {
        for (std::int64_t k = 0; k < K; ++k) parent[b * K + k] = b * K + k;
        if (done[b]) continue;
        // The 2K best extensions of this input's live beams: enough to refill K after eos ones.
        struct Candidate { double log_prob; std::int64_t row; std::int32_t token; };
        std::vector<Candidate> candidates;
        candidates.reserve(static_cast<std::size_t>(K * V));
        for (std::int64_t k = 0; k < K; ++k) {
          const std::int64_t r = b * K + k;
          if (beams[r].log_prob == minus_infinity) continue;
          for (std::int64_t v = 0; v < V; ++v)
            candidates.push_back({beams[r].log_prob + lp[r * V + v], r, static_cast<std::int32_t>(v)});
        }
        const auto n_keep = std::min<std::size_t>(candidates.size(), static_cast<std::size_t>(2 * K));
        std::partial_sort(candidates.begin(), candidates.begin() + n_keep, candidates.end(),
                          [](const Candidate& x, const Candidate& y) {
                            return x.log_prob > y.log_prob ||
                                   (x.log_prob == y.log_prob &&
                                    (x.row < y.row || (x.row == y.row && x.token < y.token)));
                          });
        const auto extended = [&](const Candidate& cand) {
          std::vector<std::int32_t> seq = beams[cand.row].tokens;
          seq.push_back(cand.token);
          return seq;
        };
        std::vector<const Candidate*> survivors;   // best first
        for (std::size_t c = 0; c < n_keep && static_cast<std::int64_t>(survivors.size()) < K; ++c) {
          const Candidate& cand = candidates[c];
          if (o.eos_id >= 0 && cand.token == o.eos_id) {
            if (static_cast<std::int64_t>(c) < K) {
              std::vector<std::int32_t> seq = extended(cand);
              const double score = normalised(cand.log_prob, seq.size(), o.length_penalty);
              finished[b].push_back({std::move(seq), cand.log_prob, score});
            }
            continue;
          }
          survivors.push_back(&cand);
        }
        // Which row a survivor takes: its parent's own, if it is that parent's first survivor, so
        // its KV caches need not move; the rest fill the rows whose parents died. A step whose
        // parents are 0 0 1 2 then copies one row's caches instead of three (and saves none).
        std::vector<bool> taken(static_cast<std::size_t>(K), false);
        std::vector<std::int64_t> slot(survivors.size(), -1);
        for (std::size_t s = 0; s < survivors.size(); ++s) {
          const std::int64_t own = survivors[s]->row - b * K;
          if (!taken[own]) taken[own] = true, slot[s] = own;
        }
        std::int64_t free_slot = 0;
        for (std::size_t s = 0; s < survivors.size(); ++s) {
          if (slot[s] >= 0) continue;
          while (taken[free_slot]) ++free_slot;
          taken[free_slot] = true, slot[s] = free_slot;
        }
        for (std::size_t s = 0; s < survivors.size(); ++s) {
          const Candidate& cand = *survivors[s];
          const std::int64_t r = b * K + slot[s];
          next[r] = {extended(cand), cand.log_prob};
          parent[r] = cand.row;
        }
        // Done when K hypotheses are finished and no live one can still beat the worst of them
        // (exact for length_penalty 0, where extending only lowers a log-probability).
        if (static_cast<std::int64_t>(finished[b].size()) >= K) {
          double worst = std::numeric_limits<double>::infinity();
          for (const auto& h : finished[b]) worst = std::min(worst, h.score);
          double best_live = minus_infinity;
          if (!survivors.empty()) {
            const Beam& best = next[b * K + slot[0]];
            best_live = normalised(best.log_prob, best.tokens.size(), o.length_penalty);
          }
          if (worst >= best_live) done[b] = true;
        }
      }
      beams = std::move(next);
      if (t + 1 == o.max_length || std::all_of(done.begin(), done.end(), [](bool d) { return d; })) break;
      model.reorder_rows(parent);
      std::vector<std::int32_t> last(static_cast<std::size_t>(rows), o.start_id);
      for (std::int64_t r = 0; r < rows; ++r)
        if (!beams[r].tokens.empty()) last[r] = beams[r].tokens.back();
      tokens = column(last);
    }
  });

  for (std::int64_t b = 0; b < B; ++b) {
    if (!done[b])
      for (std::int64_t k = 0; k < K; ++k) {
        const Beam& beam = beams[b * K + k];
        if (beam.log_prob == minus_infinity || beam.tokens.empty()) continue;
        finished[b].push_back({beam.tokens, beam.log_prob,
                               normalised(beam.log_prob, beam.tokens.size(), o.length_penalty)});
      }
    auto& f = finished[b];
    std::stable_sort(f.begin(), f.end(), [](const Hypothesis& x, const Hypothesis& y) { return x.score > y.score; });
    if (static_cast<std::int64_t>(f.size()) > K) f.resize(static_cast<std::size_t>(K));
  }
  return finished;
}

}  // namespace ctrax::decode
