#pragma once
// Runs kiln on two ranks as a user would: `mpirun -np 2 kiln ...` (as root in
// CI: --allow-run-as-root; --oversubscribe, since a CI machine may have fewer
// slots than ranks), over shared memory or TCP, with a timeout so that a hang
// is a failure, never a stuck suite.
#include <cstdlib>
#include <string>
#include <vector>

#include "cli/run_kiln.h"
#include "compiler/runtime/mpi_job.h"

enum class Transport { shared_memory, tcp };

// Open MPI leaks what MPI_Init allocates, which LeakSanitizer would report
// (the sanitizer build), and its memory patcher (hooks into malloc for RDMA
// caches, which shared memory and TCP do not use) is left out, as it fights
// AddressSanitizer's own allocator; shared memory copies through the sender's
// buffer rather than the kernel's cross-process copy, which containers often
// forbid.
inline std::string mpirun_prefix(int ranks, Transport t = Transport::shared_memory) {
  return "env ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0 timeout 600 mpirun -np " + std::to_string(ranks) +
         " --allow-run-as-root --oversubscribe --mca memory ^patcher --mca btl " +
         (t == Transport::tcp ? "self,tcp" : "self,vader --mca btl_vader_single_copy_mechanism none") + " ";
}

inline KilnResult mpirun_kiln(int ranks, const std::vector<std::string>& args, Transport t = Transport::shared_memory) {
  return run_kiln(args, mpirun_prefix(ranks, t));
}

// Whether these tests can run: kiln built with MPI and mpirun on the PATH. In
// CI they must (tools/install_deps.sh installs Open MPI), so there a missing
// MPI is a failure, not a skip.
inline bool mpi_ready() {
  const bool ready = kiln::compiler::mpi_built() && std::system("command -v mpirun >/dev/null 2>&1") == 0;
  const char* ci = std::getenv("CI");
  if (!ready && ci && std::string(ci) == "true") throw std::runtime_error("CI: kiln was built without MPI, or mpirun is missing");
  return ready;
}
