#pragma once
// Linux perf's map of JIT'd code: with KILN_PERF_MAP=1 in the environment, every
// function the JIT links (kernels and their outlined parts: GEMM micro-kernels,
// packing, parallel-loop bodies) gets a line "ADDR SIZE NAME" in
// /tmp/perf-PID.map, which `perf report` reads to name samples in JIT'd code.
// A kernel's functions are named after its symbol and what it is (its kind and
// op count and first result), e.g. "[matmul 1 ops f32[1024,8000]] matmul.micro".
#include <llvm/ExecutionEngine/Orc/LLJIT.h>

#include <string>

namespace kiln::compiler {

// Adds the perf map writer to the JIT's object linking layer if KILN_PERF_MAP is
// set (and the layer is JITLink's); otherwise does nothing.
void enable_perf_map(llvm::orc::LLJIT& jit);

// The label of the object being linked next on this thread, prefixed to its
// functions' names in the map.
void set_perf_map_label(std::string label);

}  // namespace kiln::compiler
