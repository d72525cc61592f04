// The MPI implementation of dist::Communicator (built when meson finds MPI: -Dmpi=auto|enabled).
#define OMPI_SKIP_MPICXX 1   // the C API only (the deprecated C++ bindings warn under -Wextra)
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <fmt/format.h>

#include <cstdlib>
#include <mutex>
#include <stdexcept>
#include <vector>

#include "core/dist/communicator.hpp"

namespace ctrax::dist {

namespace {

void check(int code, const char* call) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw std::runtime_error(fmt::format("{} failed: {}", call, std::string(text, static_cast<std::size_t>(length))));
}

MPI_Datatype mpi_type(DType dtype) {
  switch (dtype) {
    case DType::float32: return MPI_FLOAT;
    case DType::float64: return MPI_DOUBLE;
    case DType::int32: return MPI_INT32_T;
    case DType::bool_: break;
  }
  throw std::invalid_argument("MPI: bool tensors are not reduced");
}

class Mpi final : public Communicator {
 public:
  Mpi() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      check(MPI_Init(nullptr, nullptr), "MPI_Init");
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
      });
    }
    // Errors are returned to ctrax, which throws with the call's name, instead of aborting.
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_size(MPI_COMM_WORLD, &size_);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
    MPI_Comm node;
    check(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
          "MPI_Comm_split_type");
    MPI_Comm_size(node, &local_size_);
    MPI_Comm_free(&node);
    char version[MPI_MAX_LIBRARY_VERSION_STRING];
    int length = 0;
    MPI_Get_library_version(version, &length);
    std::string v(version, static_cast<std::size_t>(length));
    library_ = v.substr(0, v.find_first_of(",\n"));
  }
  int size() const override { return size_; }
  int rank() const override { return rank_; }
  int local_size() const override { return local_size_; }
  std::string describe() const override { return fmt::format("MPI, rank {} of {} ({})", rank_, size_, library_); }
  void barrier() override { check(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier"); }
  void abort(int status) override {
    std::fflush(stdout);
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, status);
  }
  void start_sum(void* data, std::size_t n, DType dtype) override {
    MPI_Request request;
    check(MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(n), mpi_type(dtype), MPI_SUM, MPI_COMM_WORLD, &request),
          "MPI_Iallreduce");
    requests_.push_back(request);
    // Open MPI moves a non-blocking collective along inside MPI calls: let the earlier ones advance.
    int done = 0;
    check(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE), "MPI_Testall");
  }
  void wait_all() override {
    std::vector<MPI_Request> requests = std::move(requests_);
    requests_.clear();
    check(MPI_Waitall(static_cast<int>(requests.size()), requests.data(), MPI_STATUSES_IGNORE), "MPI_Waitall");
  }

 protected:
  void all_reduce_sum(void* data, std::size_t n, DType dtype) override {
    check(MPI_Allreduce(MPI_IN_PLACE, data, static_cast<int>(n), mpi_type(dtype), MPI_SUM, MPI_COMM_WORLD), "MPI_Allreduce");
  }
  void broadcast_bytes(void* data, std::size_t bytes, int root) override {
    check(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, MPI_COMM_WORLD), "MPI_Bcast");
  }

 private:
  int size_ = 1, rank_ = 0, local_size_ = 1;
  std::string library_;
  std::vector<MPI_Request> requests_;   // started sums, until wait_all
};

}  // namespace

std::shared_ptr<Communicator> mpi_communicator() {
  static std::mutex m;
  static std::shared_ptr<Communicator> comm;   // MPI_Init runs once per process
  std::lock_guard<std::mutex> lock(m);
  if (!comm) comm = std::make_shared<Mpi>();
  return comm;
}

}  // namespace ctrax::dist
