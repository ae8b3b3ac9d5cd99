#pragma once
// The JIT backend: in the constructor, the graph goes through the compiler
// pipeline (pipeline.h: passes, fusion, schedule, memory plan) and its kernels
// are compiled to machine code (jit/jit_engine.h: in parallel, through the
// kernel cache); each run then calls the kernels in order over the bound
// tensors, the arena and the output tensors. Unsupported ops fail in the
// constructor with kiln::Error("jit: no lowering for op 'X'").
//
// Run-invariant calls (schedule/program.h: they read only params the graph
// never assigns, and constants) run on the first run and on the first after a
// param is bound or unbound; other runs skip them and read their results from
// the executable's own tensors, which an unbind frees (an ExecutableCache
// unbinds the params of the executables it parks). With --check-numerics every
// run runs them, so that every value is checked as it is made.
#include <memory>
#include <string>
#include <vector>

#include "compiler/jit/jit_engine.h"
#include "compiler/pipeline.h"
#include "compiler/run_profile.h"
#include "compiler/workspace.h"
#include "engine/executable.h"

namespace kiln::compiler {

struct JitOptions {
  std::string target_cpu;  // empty: the host CPU and its features
  PipelineOptions pipeline;
  KernelJitOptions kernels;
  std::shared_ptr<Workspace> workspace;  // shared with other executables; null: its own
};

class JitExecutable : public Executable {
 public:
  explicit JitExecutable(Graph graph, const JitOptions& options = {});
  ~JitExecutable() override;

  const CompileTimes& compile_times() const { return times_; }
  const Target& target() const { return target_; }
  const CompiledGraph& compiled() const { return compiled_; }

  // Profiling: while on, each run records its kernel calls' spans and their
  // parallel loops' chunks, thread by thread (run_profile.h); turning it on
  // (again) clears the record. One profiled executable at a time (chunk_trace.h).
  void profile(bool on);
  const RunProfile& run_profile() const { return profile_; }

 protected:
  void execute() override;
  void param_binding_changed(bool bound) override;

 private:
  [[noreturn]] void throw_run_error(int32_t status) const;
  // --check-numerics: the f32 results of program call `call_index` (engine/numerics.h).
  void check_results(size_t call_index, const std::vector<void*>& ptrs) const;
  // The data pointer of each program buffer for this run.
  std::vector<void*> buffer_pointers();

  Target target_;
  CompileTimes times_;
  CompiledGraph compiled_;
  LoadedKernels kernels_;  // by kernel, held while this lives
  std::shared_ptr<Workspace> workspace_;
  std::vector<Tensor> invariants_;  // the invariant buffers' memory, in buffer order (made by a run)
  bool invariants_made_ = false;    // by the invariant calls, for the params bound now
  bool profiling_ = false;
  RunProfile profile_;
};

}  // namespace kiln::compiler
