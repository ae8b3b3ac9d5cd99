#pragma once
// Kernels to machine code in this process. Each distinct kernel of a program is
// lowered into its own LLVM module, optimized at the level its structure needs,
// and compiled to an object file by a pool of threads (one per core); objects
// come from, and go to, the on-disk kernel cache (kernel_cache.h). One ORC
// LLJIT per process links them, so executables of one process share every
// kernel they have in common (a trainer's bucket shapes, an encoder and a
// decoder), and it unloads a kernel when the last of them goes. The runtime's C
// functions (compiler/runtime/kiln_runtime.h) are made visible to the JIT'd code;
// libm functions resolve from the process.
#include <string>
#include <vector>

#include "compiler/target/target.h"
#include "compiler/schedule/kernel.h"
#include "compiler/schedule/program.h"

namespace kiln::compiler {

// Where compile time went, for --time-passes. Stage times are summed over the
// compile threads (CPU time); wall_ms is the time the caller waited.
struct CompileTimes {
  double passes_ms = 0;    // graph passes and fusion
  double lower_ms = 0;     // kernel graphs -> LLVM IR
  double optimize_ms = 0;  // LLVM's pipeline
  double codegen_ms = 0;   // instruction selection, register allocation, object emission
  double link_ms = 0;      // loading objects into the JIT
  double wall_ms = 0;      // everything, as the caller waited
  int kernels = 0;         // distinct kernels of the program
  int compiled = 0;        // compiled now
  int from_disk = 0;       // loaded from the disk cache
  int in_process = 0;      // already loaded by this process
};

// The --time-passes table.
std::string time_passes_report(const CompileTimes& times, const Target& target);

struct KernelJitOptions {
  bool cache = true;      // the on-disk cache (--no-cache: false)
  std::string cache_dir;  // empty: KernelCache::default_dir()
};

using KernelFunction = void (*)(void** args);  // kernel_codegen.h documents the ABI

// The machine code of a program's kernels, held: the process loads a kernel once
// for every executable that uses it and unloads it when the last holder goes, so
// a long-lived process that compiles graph after graph (a Python session, the
// compiler fuzzer) keeps only the kernels of the executables alive, not every
// kernel it ever compiled (each costs memory mappings, 65,530 at most by default).
class LoadedKernels {
 public:
  LoadedKernels() = default;
  LoadedKernels(LoadedKernels&& other) noexcept;
  LoadedKernels& operator=(LoadedKernels&& other) noexcept;
  ~LoadedKernels();

  // By kernel, in the program's order.
  const std::vector<KernelFunction>& functions() const { return functions_; }

 private:
  friend LoadedKernels load_kernels(const std::vector<Kernel>&, const Target&, const KernelJitOptions&,
                                    CompileTimes&);
  void release();

  std::vector<std::string> held_;  // the symbols this holds, once per kernel
  std::vector<KernelFunction> functions_;
};

// The machine code of each kernel for `target`, in order. Throws kiln::Error.
// Thread-safe.
LoadedKernels load_kernels(const std::vector<Kernel>& kernels, const Target& target,
                           const KernelJitOptions& options, CompileTimes& times);

// How many kernels this process has loaded now (for tests).
size_t loaded_kernel_count();

// --dump-dir: each kernel of the program's LLVM IR as lowered and as optimized,
// and its assembly, as dir/kernels/kN-KIND[-SCOPE].{ll,opt.ll,s} (dump_dir.h,
// kernel_file_stem). Lowered again for the purpose: a kernel from the cache has
// no IR. Throws kiln::Error.
void dump_kernels(const Program& p, const Target& target, const std::string& dir);

}  // namespace kiln::compiler
