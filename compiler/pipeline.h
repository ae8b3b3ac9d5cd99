#pragma once
// The compiler between the Graph IR and LLVM, as every backend entry point runs
// it (the JIT, `kiln compile --emit`, AOT): graph passes, fusion, scheduling
// into a program of kernel calls, memory planning.
#include <iosfwd>
#include <string>

#include "compiler/passes/pass_manager.h"
#include "compiler/schedule/program.h"
#include "engine/ir/graph.h"

namespace kiln::compiler {

struct PipelineOptions {
  PassOptions passes;                   // the graph passes (the default pipeline ends with fusion); their
                                        // remarks are the fusion decisions (--print-fusion-decisions)
  bool reuse = true;                    // false (--no-reuse): every buffer its own memory
  bool update_in_place = true;          // assign values written into their targets (build_program)
  bool invariants = true;               // run-invariant calls marked, their results kept (build_program)
  std::ostream* memory_plan = nullptr;  // --print-memory-plan
  // --dump-dir: every stage of each compile into a directory of its own under
  // this one (dump_dir.h); the JIT adds its kernels' LLVM IR and assembly.
  std::string dump_dir;
};

struct CompiledGraph {
  Graph graph;      // after passes and fusion: declarations and output names as the input's
  Program program;  // its schedule and memory plan
  double passes_ms = 0;
  std::string dump_dir;  // this compile's directory under PipelineOptions::dump_dir; empty: none
};

// Throws kiln::Error.
CompiledGraph compile_graph(const Graph& g, const PipelineOptions& options = {});

}  // namespace kiln::compiler
