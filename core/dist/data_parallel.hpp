// ctrax/core/dist/data_parallel.hpp — data parallelism behind one seam: which rows are this
// process's, what they weigh, what they draw, and the whole batch's loss and gradients.
//
// K processes (mpirun -np K) train one model as one process would (docs/12_scale.md). The training
// step is the single-process algorithm; this object is the only place that knows there are K:
//
//   dist::DataParallel parallel(comm);                        // nullptr: this process alone
//   const dist::BatchPart part = parallel.part(global, step_rng);
//   model->set_rng(part.rng);
//   const dist::LossAndGradients lg = parallel.loss_and_gradients(
//       part, [&](const Stack& rows) { return (*model_with_loss)(rows)[0]; }, weights);
//   optimizer->update(step, lr, weights, lg.gradients);      // the same update in every process
//
// WHAT IT DOES (one process: nothing — part() is the whole batch with share 1, the gradients are
// grad()'s):
//   rows      process r takes rows [r·B/K, (r+1)·B/K) of every item of the global batch; a batch
//             K does not divide is an error (training) or is completed with copies of row 0 of
//             weight 0, which no weighted mean counts (evaluation: padded_part).
//   share     every ctrax loss and metric is a weighted mean Σ w·l / Σ w (weights: the batch's last
//             item), so the whole batch's value is Σ_r (W_r / W) · value_r, W_r this process's part
//             of the weight.
//   rng       the step's key with this process's row window: every batch-major draw under it (each
//             dropout mask) gives these rows what the single process's draw gives them
//             (core/tensor/random.hpp).
//   sums      each gradient, scaled by the share, joins a bucket as soon as the backward pass
//             completes it (grad()'s on_ready), and full buckets are summed while the pass goes on
//             (gradient_buckets.hpp); overlap off sums them all after the pass, to measure the gain.
// NOT THE SINGLE PROCESS: BatchNorm in training normalises each process's rows by their own
// statistics and keeps its own running statistics (process 0's are checkpointed), as Trax under
// pmap and PyTorch's DDP without SyncBatchNorm do (docs/12_scale.md).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "core/dist/communicator.hpp"
#include "core/tensor/random.hpp"
#include "core/tensor/stack.hpp"

namespace ctrax::dist {

// This process's part of a global batch.
struct BatchPart {
  Stack rows;          // its rows of every item (one process: the batch itself)
  double share = 1.0;  // W_r / W, its part of the batch's weight (0: its rows weigh nothing)
  Rng rng;             // the step's key, drawing for these rows what the whole batch draws for them
};

// The whole batch's loss, and its gradients with respect to the weights, in every process.
struct LossAndGradients {
  double loss = 0;
  std::vector<Tensor> gradients;
  double sum_seconds = 0;   // the gradients' sum after this process's backward pass ended
};

class DataParallel {
 public:
  explicit DataParallel(std::shared_ptr<Communicator> comm = nullptr, bool overlap_gradient_sum = true);

  int size() const { return comm_->size(); }
  int rank() const { return comm_->rank(); }
  bool lead() const { return rank() == 0; }   // the process that prints, writes and reads checkpoints
  Communicator& communicator() const { return *comm_; }

  // Training batches: (inputs..., targets, weights) sharing a batch axis that K divides; else an
  // error naming `what` and what to change.
  void check_divides(const Stack& batch, const std::string& what) const;
  // This process's rows, share and randomness of a training batch (checked by check_divides).
  BatchPart part(const Stack& global, const Rng& rng) const;
  // The same for an evaluation batch, completed first with rows of weight 0 when K does not divide it.
  BatchPart padded_part(const Stack& global, const Rng& rng) const;

  // The loss of part.rows (loss_of returns a scalar on the tape) and its gradients with respect to
  // `weights`, combined over the processes into the whole batch's.
  LossAndGradients loss_and_gradients(const BatchPart& part, const std::function<Tensor(const Stack&)>& loss_of,
                                      const std::vector<Tensor>& weights) const;

  // Σ over the processes of each value (one process: the values).
  std::vector<double> sum(std::vector<double> values) const;
  bool any(bool asked) const;   // true in every process when any process says so
  // At start: every process built the same initial weights (else an error naming those that did
  // not), then the lead's tensors copied into every process's, in place.
  void check_same(const std::vector<Tensor>& weights) const;
  void from_lead(std::vector<Tensor>& tensors) const;

 private:
  std::shared_ptr<Communicator> comm_;
  bool overlap_;
};

}  // namespace ctrax::dist
