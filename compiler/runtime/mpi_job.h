#pragma once
// A data-parallel job over Open MPI: `mpirun -np N kiln train ...` starts N
// processes (ranks); start_mpi_job() in each installs MPI's collectives as the
// process's (engine/tensor/collectives.h), so the allreduce op and every
// check between ranks talk through MPI. kiln builds without MPI where
// libopenmpi-dev is absent; mpi_built() then says false and start_mpi_job()
// refuses.
#include <string>

namespace kiln::compiler {

// Whether this kiln was built with MPI.
bool mpi_built();
// The ranks mpirun asked for (Open MPI's OMPI_COMM_WORLD_SIZE), or 0 when the
// process was not started by mpirun.
int mpirun_ranks();
// Initializes MPI (once) and installs its collectives; MPI is finalized when
// the process exits. Throws kiln::Error when kiln was built without MPI.
void start_mpi_job();
// Whether start_mpi_job() ran.
bool in_mpi_job();
// Ends every rank of the job, after printing `message` on this rank's stderr,
// named by its rank ("kiln: error: x" as "kiln: rank 1: error: x")
// (MPI_Abort: mpirun kills the others, so none waits forever on a collective
// this rank will never join).
[[noreturn]] void abort_mpi_job(const std::string& message, int exit_code);

}  // namespace kiln::compiler
