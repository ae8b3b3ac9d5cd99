#include "compiler/runtime/mpi_job.h"

#include <cstdlib>
#include <iostream>
#include <string>

#include "engine/ir/error.h"
#include "engine/tensor/collectives.h"

#ifdef KILN_HAS_MPI
#include "compiler/runtime/mpi_collectives.h"
#endif

namespace kiln::compiler {
namespace {
bool started = false;
}  // namespace

bool mpi_built() {
#ifdef KILN_HAS_MPI
  return true;
#else
  return false;
#endif
}

int mpirun_ranks() {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (!size) return 0;
  char* end = nullptr;
  const long n = std::strtol(size, &end, 10);
  return end != size && *end == '\0' && n > 0 && n < (1L << 24) ? static_cast<int>(n) : 0;
}

void start_mpi_job() {
  if (started) return;
#ifdef KILN_HAS_MPI
  install_mpi_collectives();
  started = true;
#else
  throw Error("this kiln was built without MPI (libopenmpi-dev was not found when it was configured), so it cannot "
              "train on " + std::to_string(mpirun_ranks()) + " ranks: install openmpi-bin and libopenmpi-dev "
              "(tools/install_deps.sh) and build again");
#endif
}

bool in_mpi_job() { return started; }

void abort_mpi_job(const std::string& message, int exit_code) {
  // "kiln: error: ..." becomes "kiln: rank 1: error: ...".
  const std::string prefix = "kiln: ";
  const std::string rank = prefix + "rank " + std::to_string(collectives().rank()) + ": ";
  std::cerr << (message.rfind(prefix, 0) == 0 ? rank + message.substr(prefix.size()) : rank + message) << std::endl;
#ifdef KILN_HAS_MPI
  if (started) abort_with_mpi(exit_code);
#endif
  std::_Exit(exit_code);
}

}  // namespace kiln::compiler
