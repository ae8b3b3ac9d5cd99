#pragma once
// Collectives: how one process of a data-parallel job talks to the others
// (its ranks). The `allreduce` op's reference kernel and the JIT's program both
// go through the process's Collectives; with one rank, the default, every
// collective is the identity. The MPI implementation lives with the runtime
// (compiler/runtime/mpi_collectives.h) and is installed by whoever starts the
// job (`kiln train` under mpirun), so nothing below the compiler knows MPI.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "engine/ir/dtype.h"

namespace kiln {

class Collectives {
 public:
  virtual ~Collectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // Sums `count` elements of `dtype` at `data` over all ranks, in place, and
  // returns when every rank's sum is there. Every rank holds the same result.
  virtual void allreduce(void* data, int64_t count, DType dtype) = 0;
  // The same, started and not waited for: `data` must not be touched until
  // wait(handle) returns. test(handle) says whether it is done and lets it
  // advance (MPI moves data only inside its calls): a run tests the started
  // ones between kernels. A handle is waited for exactly once.
  virtual int64_t start_allreduce(void* data, int64_t count, DType dtype) = 0;
  virtual bool test(int64_t handle) = 0;
  virtual void wait(int64_t handle) = 0;

  // Rank 0's `bytes` at `data` to every rank. The ranks that wait for rank 0
  // sleep between tests (rank 0 may be evaluating for minutes: a rank spinning
  // in MPI would take a core from it).
  virtual void broadcast(void* data, int64_t bytes) = 0;
  // Returns when every rank has called it; those waiting sleep, as above.
  virtual void barrier() = 0;
  // Every rank's `bytes`, in rank order (ranks may give different lengths).
  virtual std::vector<std::string> allgather(const std::string& bytes) = 0;
};

// The process's collectives: one rank unless set_collectives() installed others.
Collectives& collectives();
void set_collectives(std::unique_ptr<Collectives> c);

// Refuses a job whose ranks disagree: gathers every rank's `value` (short and
// printable: a setting, a size list, a digest) and throws kiln::Error naming
// `what`, the first rank whose value differs from rank 0's, and both values.
// Every rank must call it, with the same `what`.
void check_ranks_agree(const std::string& what, const std::string& value);

}  // namespace kiln
