// core/decode/internal/token_program.hpp — a decoded token as ONE team job: the layer tree,
// lowered once to a flat program of row steps that every thread of the team runs.
//
// Not installed (an `internal/` folder). Decoding a token the tree's way walks every layer on
// thread 0 and hands each product to the other threads and back; where the cores sit on different
// dies each hand-over waits on a cache line crossing between them, and the walk runs on one core
// while the others wait (docs/11_performance.md has the measurements). A TokenProgram is the same token as one job:
//
//   - each thread keeps its own copy of the small rows (the residual stream, a layer norm's
//     output) and computes them itself, so nothing is handed over to start a product;
//   - a product's columns are cut between the threads exactly as the tree's product cuts them
//     (blas::rows_plan: its panels or blocks), into one set of rows both read;
//   - attention's heads are cut as the tree's attention cuts them (attention_rows_heads), each
//     thread writing its heads' keys and values into the KV cache;
//   - the threads meet (TeamPhases) only where one reads what the other wrote: before a product
//     reads a row the team made, before a row op reads one. A ReLU on a product's own columns, or
//     attention on heads whose q, k and v columns the thread made itself, needs no meeting.
//
// Every value is the bits the tree computes (the same kernels, each column and head summed alone
// as before; tests/core/decode/test_token_program.cpp checks tokens and log-probabilities bit for
// bit), the layers' state (KV caches, their counts, position counters) is updated as the tree
// updates it, and the tree takes over any token the program declines.
//
// LOWERING. A layer says what its forward does to one decoded row through
// Layer::lower_token(TokenProgramBuilder&): it pops its n_in values from the builder's stack and
// pushes its n_out, emitting steps (a Dense: builder.dense(x, w, b)), or returns false — then no
// program is built and the tree decodes. The program is derived from the tree, so a user's model
// made of these layers gets it too; anything else (rotary attention, more than 8 rows, float64
// weights) decodes as before. Up to 8 rows run together (sampled rows, a beam search's beams):
// every value is then that many rows, one after the other.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <vector>

#include "core/engine/gemm.hpp"
#include "core/engine/parallel.hpp"
#include "core/layer/layer.hpp"
#include "core/tensor/attention.hpp"

namespace ctrax::decode {

class TokenProgram;

class TokenProgramBuilder {
 public:
  using Value = int;   // the rows of a value (or the token ids the program starts from); -1: unsupported

  // The stack the layers work on, as a Stack: element 0 is the top.
  std::vector<Value>& stack() { return stack_; }
  // Pops the top n values (in stack order) / pushes values so that values[0] is the new top.
  std::vector<Value> take(int n);
  void put(const std::vector<Value>& values);
  // Select's rearrangement (Dup, Drop and Swap are ones too): pops n_in values and pushes
  // those at `indices` among them; false when the stack is short.
  bool select(int n_in, const std::vector<int>& indices);
  // A lowering's usual shape: pops n values and pushes the one f makes of them (a step's result);
  // false when the stack is short or f gives -1.
  template <class F>
  bool replace_top(int n, F&& f) {
    const std::vector<Value> in = take(n);
    if (static_cast<int>(in.size()) != n) return false;
    const Value out = f(in);
    put({out});
    return out >= 0;
  }

  // The steps. Each returns the new value, or -1 when its inputs are not what it takes (the layer
  // then returns false).
  // Row `token` of a (vocab, d) table, for each row's token.
  Value embed(Value token, const Tensor& table);
  // x + table[p], p the position counter owner.state()[slot] holds; afterwards the counter is p + 1.
  Value add_position(Value x, const Tensor& table, Layer& owner, int slot);
  Value layer_norm(Value x, const Tensor& scale, const Tensor& bias, double epsilon);
  Value add(Value a, Value b);
  // x·w + b (b may be undefined: x·w); w a (K, N) matrix.
  Value dense(Value x, const Tensor& w, const Tensor& b);
  Value relu(Value x);
  // The heads' view of a row (SplitIntoHeads / MergeHeads): the same numbers.
  Value split_heads(Value x, int n_heads);
  Value merge_heads(Value x, int n_heads);
  // Causal attention of one new position over owner's KV cache: owner.state() holds the keys
  // (B·H, max_len, d), the values (B·H, max_len, d_v) and the filled count; q, k, v split into H
  // heads.
  // Writes k and v at the count, attends over count + 1 positions, then the count is count + 1.
  Value causal_attention(Value q, Value k, Value v, Layer& owner, const LinearBias& bias);

 private:
  friend class TokenProgram;
  // A value: B rows of `width` floats, one after the other — each thread's own copy, or (shared)
  // one set the threads make in parts, thread t columns parts[t] of every row — or the token ids
  // the program starts from.
  struct Info {
    std::int64_t width = 0;
    bool token = false;
    bool shared = false;
    int heads = 0;                      // split into this many heads (split_heads); 0: not split
    std::vector<blas::Columns> parts;   // shared: who makes which columns
    int phase = -1;                     // shared: the phase (between two meetings) that made it
    float* data = nullptr;              // shared: the rows; own: thread t's copy at data + t · stride
    std::int64_t stride = 0;
  };
  TokenProgramBuilder(int threads, std::int64_t rows);
  Info& info(Value v);
  Value new_value(std::int64_t width, bool shared);
  // Makes sure every thread may read all of v: a meeting if v's parts were written since the last.
  void need_whole(Value v);
  // Thread t will read columns [begin, end) of v: a meeting unless t made them itself.
  void need_columns(Value v, const std::vector<blas::Columns>& wanted);
  float* row(Value v, int t);   // thread t's copy of the rows (a shared value: the one set)

  int threads_;
  std::int64_t rows_;
  std::vector<Value> stack_;
  std::vector<Info> values_;
  std::vector<std::unique_ptr<float, void (*)(void*)>> storage_;
  int phase_ = 0;
  bool split_ = false;   // some step is cut between threads
  std::vector<std::function<void(int t)>> steps_;
  std::vector<std::function<bool()>> before_;   // thread 0, before the job: false declines the token
  std::vector<std::function<void()>> after_;    // thread 0, after it: the layers' state
  std::vector<blas::RowsPlan> products_;
  std::unique_ptr<TeamPhases> phases_;
  std::vector<std::int32_t> tokens_;   // this step's token ids, one a row, set before the job
};

class TokenProgram {
 public:
  // The program for decoding `rows` rows (1 to 8) of `model` together (its state started for
  // them: start_decoding), or nullptr when a layer cannot be lowered, the execution plan is off,
  // or the model does not take one input. Build it inside the call's WeightPanels scope
  // (PackedWeights): its products read the panels.
  static std::unique_ptr<TokenProgram> compile(Layer& model, std::int64_t rows = 1);

  // The model's logits (rows, 1, vocab) for these tokens (rows, 1) int32, the layers' state
  // advanced as the tree advances it; nullopt when the program declines them (a cache full, a
  // token out of range, a team of another size, another shape): then the tree runs them and gives
  // its answer or its error.
  std::optional<Tensor> logits(const Tensor& tokens);

 private:
  explicit TokenProgram(std::unique_ptr<TokenProgramBuilder> b, TokenProgramBuilder::Value out);
  std::unique_ptr<TokenProgramBuilder> b_;
  TokenProgramBuilder::Value out_;
  bool packed_ = false;   // the products' panels are filled (after the first token)
};

// next_token_log_probs (sampling.hpp) through the program when there is one and it takes these
// tokens: the same numbers.
Tensor next_token_log_probs(TokenProgram* program, Layer& model, const Tensor& inputs, const Tensor& tokens);

}  // namespace ctrax::decode
