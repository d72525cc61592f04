#include "core/dist/communicator.hpp"

#include <fmt/format.h>

#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace ctrax::dist {

namespace {

void check_reducible(const Tensor& t, const char* what) {
  if (!t.defined() || t.is_meta())
    throw std::invalid_argument(fmt::format("{}: a tensor without memory ({})", what, t.defined() ? t.signature() : "undefined"));
  if (t.dtype() == DType::bool_)
    throw std::invalid_argument(fmt::format("{}: bool tensors cannot be reduced ({})", what, t.signature()));
}

class SingleProcess final : public Communicator {
 public:
  int size() const override { return 1; }
  int rank() const override { return 0; }
  std::string describe() const override { return "1 process"; }
  void barrier() override {}
  void abort(int) override {}
  void start_sum(void*, std::size_t, DType) override {}
  void wait_all() override {}

 protected:
  void all_reduce_sum(void*, std::size_t, DType) override {}
  void broadcast_bytes(void*, std::size_t, int) override {}
};

}  // namespace

void Communicator::all_reduce(std::vector<Tensor>& tensors, Reduce op, std::size_t bucket_bytes) {
  for (const Tensor& t : tensors) {
    check_reducible(t, "all_reduce");
    if (op == Reduce::mean && t.dtype() == DType::int32)
      throw std::invalid_argument(fmt::format("all_reduce: the mean of an int32 tensor ({}) is not an int32", t.signature()));
  }
  std::vector<unsigned char> bucket;
  std::size_t i = 0;
  while (i < tensors.size()) {
    // Consecutive tensors of one dtype, up to bucket_bytes (at least one tensor).
    const DType dtype = tensors[i].dtype();
    const std::size_t item = itemsize(dtype);
    std::size_t j = i, bytes = 0;
    while (j < tensors.size() && tensors[j].dtype() == dtype &&
           (j == i || bytes + static_cast<std::size_t>(tensors[j].numel()) * item <= bucket_bytes))
      bytes += static_cast<std::size_t>(tensors[j++].numel()) * item;
    bucket.resize(bytes);
    std::size_t at = 0;
    for (std::size_t k = i; k < j; ++k) {
      const std::size_t b = static_cast<std::size_t>(tensors[k].numel()) * item;
      std::memcpy(bucket.data() + at, tensors[k].raw_data(), b);
      at += b;
    }
    all_reduce_sum(bucket.data(), bytes / item, dtype);
    at = 0;
    const double scale = op == Reduce::mean ? 1.0 / size() : 1.0;
    for (std::size_t k = i; k < j; ++k) {
      const std::size_t n = static_cast<std::size_t>(tensors[k].numel()), b = n * item;
      std::memcpy(tensors[k].raw_data(), bucket.data() + at, b);
      if (scale != 1.0) {
        if (dtype == DType::float32) {
          float* p = tensors[k].data<float>();
          for (std::size_t e = 0; e < n; ++e) p[e] = static_cast<float>(p[e] * scale);
        } else {
          double* p = tensors[k].data<double>();
          for (std::size_t e = 0; e < n; ++e) p[e] *= scale;
        }
      }
      at += b;
    }
    i = j;
  }
}

void Communicator::broadcast(std::vector<Tensor>& tensors, int root) {
  if (root < 0 || root >= size())
    throw std::invalid_argument(fmt::format("broadcast: root {} is not a rank of {} processes", root, size()));
  for (Tensor& t : tensors) {
    if (!t.defined() || t.is_meta())
      throw std::invalid_argument(fmt::format("broadcast: a tensor without memory ({})", t.defined() ? t.signature() : "undefined"));
    broadcast_bytes(t.raw_data(), static_cast<std::size_t>(t.numel()) * itemsize(t.dtype()), root);
  }
}

std::shared_ptr<Communicator> single_process() { return std::make_shared<SingleProcess>(); }

#ifdef CTRAX_HAVE_MPI
std::shared_ptr<Communicator> mpi_communicator();   // mpi_communicator.cpp
#endif

std::shared_ptr<Communicator> make_communicator() {
  const bool under_mpirun = std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr;
#ifdef CTRAX_HAVE_MPI
  if (under_mpirun) return mpi_communicator();
#else
  if (under_mpirun && std::getenv("OMPI_COMM_WORLD_SIZE") && std::string(std::getenv("OMPI_COMM_WORLD_SIZE")) != "1")
    throw std::runtime_error(
        "started by mpirun with several processes, but this ctrax was built without MPI: install libopenmpi-dev "
        "and rebuild (meson -Dmpi=enabled), or run one process");
#endif
  return single_process();
}

}  // namespace ctrax::dist
