#include "core/decode/internal/token_program.hpp"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>

#include "core/decode/sampling.hpp"
#include "core/engine/flush_denormals.hpp"
#include "core/tensor/ops.hpp"
#include "core/tensor/internal/row_kernels.hpp"
#include "core/tensor/runtime.hpp"

namespace ctrax::decode {

namespace {

// Each thread's copy of a value starts on cache lines of its own: never a line shared with another's.
std::int64_t padded(std::int64_t width) { return (width + 15) / 16 * 16; }

bool float_tensor(const Tensor& t, int rank) {
  return t.defined() && !t.is_meta() && t.dtype() == DType::float32 && t.rank() == rank;
}

}  // namespace

TokenProgramBuilder::TokenProgramBuilder(int threads, std::int64_t rows)
    : threads_(threads), rows_(rows), phases_(std::make_unique<TeamPhases>(threads)),
      tokens_(static_cast<std::size_t>(rows)) {}

std::vector<TokenProgramBuilder::Value> TokenProgramBuilder::take(int n) {
  if (n < 0 || n > static_cast<int>(stack_.size())) return {};
  std::vector<Value> top(stack_.begin(), stack_.begin() + n);
  stack_.erase(stack_.begin(), stack_.begin() + n);
  return top;
}

void TokenProgramBuilder::put(const std::vector<Value>& values) {
  stack_.insert(stack_.begin(), values.begin(), values.end());
}

bool TokenProgramBuilder::select(int n_in, const std::vector<int>& indices) {
  const std::vector<Value> in = take(n_in);
  if (static_cast<int>(in.size()) != n_in) return false;
  std::vector<Value> out;
  for (int i : indices) {
    if (i < 0 || i >= n_in) return false;
    out.push_back(in[static_cast<std::size_t>(i)]);
  }
  put(out);
  return true;
}

TokenProgramBuilder::Info& TokenProgramBuilder::info(Value v) { return values_.at(static_cast<std::size_t>(v)); }

TokenProgramBuilder::Value TokenProgramBuilder::new_value(std::int64_t width, bool shared) {
  Info i;
  i.width = width;
  i.shared = shared;
  i.stride = padded(rows_ * width);   // each thread's copy on cache lines of its own
  const std::int64_t n = shared ? i.stride : i.stride * threads_;
  auto* block = static_cast<float*>(std::aligned_alloc(64, static_cast<std::size_t>(n) * sizeof(float)));
  if (block == nullptr) throw std::bad_alloc();
  std::fill_n(block, n, 0.0f);
  storage_.emplace_back(block, std::free);
  i.data = block;
  if (shared) i.phase = phase_;
  values_.push_back(std::move(i));
  return static_cast<Value>(values_.size() - 1);
}

float* TokenProgramBuilder::row(Value v, int t) {
  Info& i = info(v);
  return i.shared ? i.data : i.data + t * i.stride;
}

void TokenProgramBuilder::need_whole(Value v) {
  const Info& i = info(v);
  if (!i.shared || i.phase != phase_) return;
  TeamPhases* phases = phases_.get();
  steps_.push_back([phases](int t) { phases->arrive_and_wait(t); });   // abandoned: the run loop stops
  ++phase_;
}

void TokenProgramBuilder::need_columns(Value v, const std::vector<blas::Columns>& wanted) {
  const Info& i = info(v);
  if (!i.shared || i.phase != phase_) return;
  for (int t = 0; t < threads_; ++t) {
    const blas::Columns w = wanted[static_cast<std::size_t>(t)], own = i.parts[static_cast<std::size_t>(t)];
    if (w.begin < w.end && (w.begin < own.begin || w.end > own.end)) {
      need_whole(v);
      return;
    }
  }
}

TokenProgramBuilder::Value TokenProgramBuilder::embed(Value token, const Tensor& table) {
  if (token < 0 || !info(token).token || !float_tensor(table, 2)) return -1;
  const std::int64_t V = table.dim(0), d = table.dim(1);
  const Value out = new_value(d, false);
  const float* rows = table.data<float>();
  before_.push_back([this, V] {   // else the tree's error
    return std::all_of(tokens_.begin(), tokens_.end(), [V](std::int32_t id) { return id >= 0 && id < V; });
  });
  steps_.push_back([this, out, rows, d](int t) {
    float* y = row(out, t);
    for (std::int64_t r = 0; r < rows_; ++r)
      std::memcpy(y + r * d, rows + static_cast<std::int64_t>(tokens_[static_cast<std::size_t>(r)]) * d,
                  static_cast<std::size_t>(d) * sizeof(float));
  });
  return out;
}

TokenProgramBuilder::Value TokenProgramBuilder::add_position(Value x, const Tensor& table, Layer& owner, int slot) {
  if (x < 0 || info(x).token || !float_tensor(table, 2) || table.dim(1) != info(x).width ||
      static_cast<int>(owner.state().size()) <= slot)
    return -1;
  need_whole(x);
  const std::int64_t d = table.dim(1), max_len = table.dim(0);
  const Value out = new_value(d, false);
  const float* rows = table.data<float>();
  auto position = std::make_shared<std::int64_t>(0);
  Layer* layer = &owner;
  before_.push_back([layer, slot, position, max_len] {
    *position = static_cast<std::int64_t>(layer->state()[static_cast<std::size_t>(slot)].item());
    return *position >= 0 && *position < max_len;
  });
  steps_.push_back([this, x, out, rows, d, position](int t) {
    const float* a = row(x, t);
    const float* p = rows + *position * d;   // every row is at the same position
    float* y = row(out, t);
    for (std::int64_t r = 0; r < rows_; ++r)
      for (std::int64_t j = 0; j < d; ++j) y[r * d + j] = a[r * d + j] + p[j];   // x + pe[p], add's expression
  });
  after_.push_back([layer, slot, position] {
    layer->state()[static_cast<std::size_t>(slot)] = Tensor::scalar(static_cast<double>(*position + 1), DType::int32);
  });
  return out;
}

TokenProgramBuilder::Value TokenProgramBuilder::layer_norm(Value x, const Tensor& scale, const Tensor& bias,
                                                         double epsilon) {
  if (x < 0 || info(x).token || info(x).heads != 0 || !float_tensor(scale, 1) || !float_tensor(bias, 1) ||
      scale.dim(0) != info(x).width || bias.dim(0) != info(x).width)
    return -1;
  need_whole(x);
  const std::int64_t d = info(x).width;
  const Value out = new_value(d, false);
  const float *s = scale.data<float>(), *b = bias.data<float>();
  steps_.push_back([this, x, out, s, b, d, epsilon](int t) {
    layer_norm_rows(row(x, t), s, b, row(out, t), 0, rows_, d, epsilon);
  });
  return out;
}

TokenProgramBuilder::Value TokenProgramBuilder::add(Value a, Value b) {
  if (a < 0 || b < 0 || info(a).token || info(b).token || info(a).width != info(b).width ||
      info(a).heads != info(b).heads)
    return -1;
  need_whole(a);
  need_whole(b);
  const std::int64_t d = info(a).width;
  const Value out = new_value(d, false);
  info(out).heads = info(a).heads;
  const std::int64_t n = rows_ * d;
  steps_.push_back([this, a, b, out, n](int t) {
    const float *x = row(a, t), *y = row(b, t);
    float* z = row(out, t);
    for (std::int64_t j = 0; j < n; ++j) z[j] = x[j] + y[j];
  });
  return out;
}

TokenProgramBuilder::Value TokenProgramBuilder::dense(Value x, const Tensor& w, const Tensor& b) {
  if (x < 0 || info(x).token || info(x).heads != 0 || !float_tensor(w, 2) || w.dim(0) != info(x).width ||
      w.dim(0) == 0 || (b.defined() && (!float_tensor(b, 1) || b.dim(0) != w.dim(1))))
    return -1;
  const std::int64_t K = w.dim(0), N = w.dim(1);
  const std::optional<blas::RowsPlan> plan = blas::rows_plan(rows_, N, K, w.data<float>(), sizeof(float));
  if (!plan) return -1;
  need_whole(x);
  products_.push_back(*plan);
  split_ = split_ || plan->cut != blas::RowsPlan::Cut::alone;
  const Value out = new_value(N, true);
  for (int t = 0; t < threads_; ++t) info(out).parts.push_back(blas::rows_columns(*plan, t, threads_));
  const float* W = w.data<float>();
  const float* bias = b.defined() ? b.data<float>() : nullptr;
  const int threads = threads_;
  steps_.push_back([this, x, out, plan = *plan, W, bias, threads, K, N](int t) {
    float* c = row(out, t);
    const blas::Columns own = info(out).parts[static_cast<std::size_t>(t)];
    if (bias)   // C starts as b (linear's beta 1)
      for (std::int64_t r = 0; r < rows_; ++r) std::copy(bias + own.begin, bias + own.end, c + r * N + own.begin);
    blas::rows_share(plan, t, threads, row(x, t), K, W, bias ? 1.0f : 0.0f, c, N);
  });
  return out;
}

TokenProgramBuilder::Value TokenProgramBuilder::relu(Value x) {
  if (x < 0 || info(x).token) return -1;
  const Info in = info(x);
  const Value out = new_value(in.width, in.shared);
  info(out).heads = in.heads;
  info(out).parts = in.parts;
  // Each thread the columns it made (a product's): no meeting. An own row: all of it.
  steps_.push_back([this, x, out](int t) {
    const Info& i = info(out);
    const blas::Columns c = i.shared ? i.parts[static_cast<std::size_t>(t)] : blas::Columns{0, i.width};
    const float* a = row(x, t);
    float* y = row(out, t);
    for (std::int64_t r = 0; r < rows_; ++r)
      for (std::int64_t j = r * i.width + c.begin; j < r * i.width + c.end; ++j)
        y[j] = a[j] > 0 ? a[j] : 0.0f;   // relu's expression
  });
  return out;
}

TokenProgramBuilder::Value TokenProgramBuilder::split_heads(Value x, int n_heads) {
  if (x < 0 || info(x).token || info(x).heads != 0 || n_heads < 1 || info(x).width % n_heads != 0) return -1;
  Info view = info(x);   // the same row, seen as heads
  view.heads = n_heads;
  values_.push_back(std::move(view));
  return static_cast<Value>(values_.size() - 1);
}

TokenProgramBuilder::Value TokenProgramBuilder::merge_heads(Value x, int n_heads) {
  if (x < 0 || info(x).token || info(x).heads != n_heads) return -1;
  Info row = info(x);
  row.heads = 0;
  values_.push_back(std::move(row));
  return static_cast<Value>(values_.size() - 1);
}

TokenProgramBuilder::Value TokenProgramBuilder::causal_attention(Value q, Value k, Value v, Layer& owner,
                                                               const LinearBias& bias) {
  if (q < 0 || k < 0 || v < 0) return -1;
  const int H = info(q).heads;
  if (H < 1 || info(k).heads != H || info(v).heads != H || info(k).width != info(q).width ||
      owner.state().size() != 3)
    return -1;
  Tensor K = owner.state()[0], V = owner.state()[1];
  const std::int64_t d = info(q).width / H, dv = info(v).width / H;
  if (!float_tensor(K, 3) || !float_tensor(V, 3) || K.dim(0) != rows_ * H || V.dim(0) != K.dim(0) || K.dim(2) != d ||
      V.dim(2) != dv || V.dim(1) != K.dim(1) || (!bias.slopes.empty() && H % static_cast<int>(bias.slopes.size()) != 0))
    return -1;
  const std::int64_t max_len = K.dim(1);
  // Thread t's heads, the same of every row (which thread computes a head changes none of its bits).
  std::vector<blas::Columns> heads, q_cols, v_cols;
  for (int t = 0; t < threads_; ++t) {
    const std::int64_t h0 = H * t / threads_, h1 = H * (t + 1) / threads_;
    heads.push_back({h0, h1});
    q_cols.push_back({h0 * d, h1 * d});
    v_cols.push_back({h0 * dv, h1 * dv});
  }
  need_columns(q, q_cols);
  need_columns(k, q_cols);
  need_columns(v, v_cols);
  const Value out = new_value(H * dv, true);
  info(out).parts = v_cols;
  info(out).heads = H;
  split_ = split_ || threads_ > 1;
  auto P = std::shared_ptr<float[]>(new float[static_cast<std::size_t>(rows_ * H * max_len)]());
  auto at = std::make_shared<std::int64_t>(0);
  auto run_bias = std::make_shared<LinearBias>(bias);
  Layer* layer = &owner;
  float *keys = K.data<float>(), *values = V.data<float>();
  before_.push_back([layer, at, max_len, keys, values, run_bias] {
    const std::vector<Tensor>& s = layer->state();
    // The cache must still be these buffers (a reset of another size makes new ones: the tree runs).
    if (s.size() != 3 || s[0].raw_data() != keys || s[1].raw_data() != values) return false;
    *at = static_cast<std::int64_t>(s[2].item());
    run_bias->q_offset = *at;
    return *at >= 0 && *at < max_len;
  });
  steps_.push_back([this, q, k, v, out, heads, d, dv, H, max_len, keys, values, P, at, run_bias](int t) {
    const auto [h0, h1] = heads[static_cast<std::size_t>(t)];
    const float *pq = row(q, t), *pk = row(k, t), *pv = row(v, t);
    for (std::int64_t r = 0; r < rows_; ++r)
      for (std::int64_t h = h0; h < h1; ++h) {   // write_heads_to_cache's copies, this thread's heads
        const std::int64_t slice = r * H + h;
        std::memcpy(keys + (slice * max_len + *at) * d, pk + slice * d, static_cast<std::size_t>(d) * sizeof(float));
        std::memcpy(values + (slice * max_len + *at) * dv, pv + slice * dv,
                    static_cast<std::size_t>(dv) * sizeof(float));
      }
    attention_rows_heads(pq, keys, values, rows_, H, d, dv, max_len, *at + 1, *run_bias, h0, h1, P.get(), row(out, t));
  });
  after_.push_back([layer, at] { layer->state()[2] = Tensor::scalar(static_cast<double>(*at + 1), DType::int32); });
  return out;
}

TokenProgram::TokenProgram(std::unique_ptr<TokenProgramBuilder> b, TokenProgramBuilder::Value out)
    : b_(std::move(b)), out_(out) {}

std::unique_ptr<TokenProgram> TokenProgram::compile(Layer& model, std::int64_t rows) {
  if (!model.execution_plan() || model.n_in() != 1 || model.n_out() < 1 || rows < 1 || rows > 8) return nullptr;
  // Two passes at most: for the team, then — when no step was cut between threads (a small
  // model: every product too small to share) — for thread 0 alone, with no meetings at all.
  for (const int threads : {num_threads(), 1}) {
    auto b = std::unique_ptr<TokenProgramBuilder>(new TokenProgramBuilder(threads, rows));
    TokenProgramBuilder::Info token;   // value 0: the token id the program starts from
    token.token = true;
    b->values_.push_back(token);
    b->stack_ = {0};
    if (!model.lower_token(*b) || b->stack_.size() != static_cast<std::size_t>(model.n_out())) return nullptr;
    const TokenProgramBuilder::Value out = b->stack_[0];
    if (out < 0 || b->info(out).token || b->info(out).heads != 0) return nullptr;
    if (threads > 1 && !b->split_) continue;
    return std::unique_ptr<TokenProgram>(new TokenProgram(std::move(b), out));
  }
  return nullptr;
}

std::optional<Tensor> TokenProgram::logits(const Tensor& tokens) {
  if (!b_) return std::nullopt;   // a step of an earlier token threw
  TokenProgramBuilder& b = *b_;
  if ((b.threads_ > 1 && num_threads() != b.threads_) || tokens.is_meta() || tokens.dtype() != DType::int32 ||
      tokens.shape() != Shape{b.rows_, 1})
    return std::nullopt;
  std::copy_n(tokens.data<std::int32_t>(), b.rows_, b.tokens_.begin());
  for (const auto& check : b.before_)
    if (!check()) return std::nullopt;
  // A step that throws (memory ran out) abandons the meetings, so the other threads stop too
  // instead of waiting for it; the first error then leaves here. The layers' state is not
  // advanced, and nothing past the filled positions of a cache is ever read.
  TeamPhases& phases = *b.phases_;
  std::exception_ptr error;
  std::atomic<bool> failed{false};
  const auto run = [&](int t) {
    try {
      for (const auto& step : b.steps_) {
        step(t);
        if (phases.abandoned()) return;
      }
    } catch (...) {
      if (!failed.exchange(true)) error = std::current_exception();
      phases.abandon();
    }
  };
  if (b.threads_ == 1) {
    const FlushDenormals flush;   // as the ops' own loops run
    run(0);
  } else {
    bool ran = true;
    parallel_team([&](int t, int n) {
      if (n != b.threads_) {   // a team of another size (every thread sees the same n)
        if (t == 0) ran = false;
        return;
      }
      run(t);
    });
    if (!ran) return std::nullopt;   // nothing was written: no step ran
  }
  if (error) {
    b_ = nullptr;   // its meetings are abandoned: no further token runs it
    std::rethrow_exception(error);
  }
  if (!packed_) {
    for (const blas::RowsPlan& plan : b.products_) blas::rows_mark_packed(plan);
    packed_ = true;
  }
  for (const auto& update : b.after_) update();
  const std::int64_t V = b.info(out_).width;
  Tensor out = Tensor::empty({b.rows_, 1, V}, DType::float32);
  std::copy_n(b.row(out_, 0), b.rows_ * V, out.data<float>());
  return out;
}

Tensor next_token_log_probs(TokenProgram* program, Layer& model, const Tensor& inputs, const Tensor& tokens) {
  if (program)
    if (const std::optional<Tensor> logits = program->logits(tokens))   // as next_token_log_probs takes the last
      return log_softmax(reshape(*logits, {logits->dim(0), logits->dim(2)}).to(DType::float64), -1);
  return next_token_log_probs(model, inputs, tokens);
}

}  // namespace ctrax::decode
