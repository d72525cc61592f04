// Run by scripts/run_mpi_test.sh under `mpirun -np K` (and alone): every rank checks what the
// communicator gives it. Exit status 0 and one "ok" line per rank when all is right.
#include <cstdio>
#include <vector>

#include "core/dist/communicator.hpp"

using namespace ctrax;

int main() {
  auto comm = dist::make_communicator();
  const int K = comm->size(), r = comm->rank();
  int bad = 0;
  // Rank r holds r + 1 everywhere; the sum is K(K+1)/2, the mean (K+1)/2. Three dtypes, buckets small
  // enough that the 1000-element tensor is one on its own.
  std::vector<Tensor> ts = {Tensor::full({3, 5}, r + 1), Tensor::full({1000}, r + 1, DType::float64),
                            Tensor::full({7}, r + 1, DType::int32), Tensor::full({2}, r + 1)};
  comm->all_reduce(ts, dist::Reduce::sum, 64);
  for (const Tensor& t : ts)
    for (double v : t.to_doubles()) bad += v != K * (K + 1) / 2.0;
  std::vector<Tensor> mean = {Tensor::full({4}, r + 1)};
  comm->all_reduce(mean, dist::Reduce::mean);
  for (double v : mean[0].to_doubles()) bad += v != (K + 1) / 2.0;
  // Rank K−1's values reach everyone.
  std::vector<Tensor> b = {Tensor::full({6}, 10 * r)};
  comm->broadcast(b, K - 1);
  for (double v : b[0].to_doubles()) bad += v != 10.0 * (K - 1);
  comm->barrier();
  std::printf("%s: %s, %d wrong values\n", bad ? "FAILED" : "ok", comm->describe().c_str(), bad);
  return bad ? 1 : 0;
}
