#pragma once
// The compiler between the Graph IR and LLVM, as every backend entry point runs
// it (the JIT, `kiln compile --emit`, AOT): graph passes, fusion, scheduling
// into a program of kernel calls, memory planning. The pipeline, not a pass,
// chooses the passes a precision needs.
#include <iosfwd>
#include <string>
#include <vector>

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

// The passes a compile runs: options.passes if it names any; else the default
// pipeline (passes/pass_manager.h) with the precision's rewrite right after its
// rewrites (PassRegistry::end_of_rewrites): bf16-matmuls and bf16-saves
// (kBf16Passes) for bf16, none for f32.
std::vector<std::string> pipeline_passes(const PassOptions& options,
                                         const PassRegistry& registry = PassRegistry::global());

// run_passes over pipeline_passes(options), as every compile runs them (and
// `kiln opt`). Throws kiln::Error.
Graph run_pipeline_passes(const Graph& g, const PassOptions& options);

// The arithmetic a precision gives `g`, for a backend that runs no passes (the
// interpreter) and for tests: f32: g; bf16: the default pipeline's rewrites,
// then its precision's rewrites, as a compile runs them.
Graph with_precision(const Graph& g, DType precision);

// Throws kiln::Error.
CompiledGraph compile_graph(const Graph& g, const PipelineOptions& options = {});

}  // namespace kiln::compiler
