#pragma once
// Collectives over Open MPI (built only where CMake finds MPI: KILN_HAS_MPI).
// mpi_job.h is the interface the rest of kiln uses.
namespace kiln::compiler {

// MPI_Init_thread (serialized: one thread at a time calls MPI, as executables
// run one at a time), errors returned rather than fatal, and the collectives
// installed as the process's; MPI_Finalize runs at exit.
void install_mpi_collectives();
// MPI_Abort on the world communicator.
[[noreturn]] void abort_with_mpi(int exit_code);

}  // namespace kiln::compiler
