// ctrax/core/dist/communicator.hpp — the processes of a data-parallel run, and what they tell each
// other.
//
// DATA PARALLELISM (Horovod; PyTorch's DistributedDataParallel with its MPI or Gloo backend): K
// processes hold the same model, each computes the gradients of its share of a global batch, and
// an all-reduce sums those gradients so that every process applies the same update. The
// communicator is the one piece that talks across processes:
//
//   auto comm = dist::make_communicator();      // MPI under mpirun (when built with it), else one process
//   comm->all_reduce(grads, dist::Reduce::mean); // in place: every process gets the mean
//   comm->broadcast(weights, 0);                 // rank 0's values everywhere
//
//   size()    number of processes K          rank()    this one's index, 0 … K−1
//   all_reduce(tensors, sum | mean)   each tensor summed (or averaged) over the processes, in place
//   broadcast(tensors, root)          root's values copied into every process's tensors, in place
//   barrier()                         returns when every process has called it
//
// BUCKETS. One MPI call per tensor would pay the call's latency a few hundred times per step (a
// Transformer has ~100 weight tensors); one call for all would need a copy of the whole gradient.
// all_reduce packs consecutive tensors of one dtype into buckets of about `bucket_bytes` (4 MB by
// default, as Horovod's fusion buffer), reduces each bucket with one call, and unpacks. Every
// process must pass the same list (shapes and dtypes in the same order); ring all-reduce moves
// 2(K−1)/K of the bytes over each link, whatever K is.
//
// WHICH IMPLEMENTATION. make_communicator() returns the MPI one when the program was started by
// mpirun (Open MPI's OMPI_COMM_WORLD_SIZE or a PMI_SIZE in the environment) and ctrax was built
// with MPI (meson -Dmpi=auto finds Open MPI when libopenmpi-dev is installed); otherwise the
// single-process one, for which all_reduce of a sum is the identity. One binary runs alone or
// under mpirun unchanged. MPI is initialised once per process (the first MPI communicator made)
// and finalised at exit.
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor/tensor.hpp"

namespace ctrax::dist {

enum class Reduce { sum, mean };

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int size() const = 0;
  virtual int rank() const = 0;
  // How many of the run's processes share this one's machine, and so its memory (1 alone; under
  // mpirun, MPI_COMM_TYPE_SHARED's count): the Loop sizes a step against the machine's memory over it.
  virtual int local_size() const { return 1; }
  // "1 process" or "MPI, rank 0 of 2 (Open MPI v4.1.4)".
  virtual std::string describe() const = 0;

  // Tensors must be float32, float64 or int32, with memory (not meta); a mean of int32 is an error.
  void all_reduce(std::vector<Tensor>& tensors, Reduce op = Reduce::sum, std::size_t bucket_bytes = 4 << 20);
  void broadcast(std::vector<Tensor>& tensors, int root = 0);
  virtual void barrier() = 0;
  // Ends every process of the run with `status`, at once (MPI_Abort: mpirun ends them all and names
  // this one). For an error on one process alone: the others would wait for it in their next sum
  // forever, and this one in MPI_Finalize for them. The single-process communicator returns (its
  // caller's error ends the run as usual). The Loop calls it when a step or its setting up fails on
  // one of several processes, the examples' main when any command does.
  virtual void abort(int status) = 0;

  // A sum in flight (MPI_Iallreduce): start_sum begins summing the n elements at `data` over the
  // processes and returns at once; wait_all returns when every started sum is done, `data` then
  // holding it. Every process must start the same sums in the same order. What overlaps the
  // all-reduce with the backward pass (gradient_buckets.hpp).
  virtual void start_sum(void* data, std::size_t n, DType dtype) = 0;
  virtual void wait_all() = 0;

 protected:
  // One contiguous buffer of n elements of dtype, summed over the processes in place.
  virtual void all_reduce_sum(void* data, std::size_t n, DType dtype) = 0;
  virtual void broadcast_bytes(void* data, std::size_t bytes, int root) = 0;
};

std::shared_ptr<Communicator> make_communicator();

// The single-process communicator (also what make_communicator() returns without mpirun).
std::shared_ptr<Communicator> single_process();

}  // namespace ctrax::dist
