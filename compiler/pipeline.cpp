#include "compiler/pipeline.h"

#include <chrono>
#include <ostream>


namespace kiln::compiler {

CompiledGraph compile_graph(const Graph& g, const PipelineOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  Graph out = run_passes(g, options.passes);
  const double passes_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  Program program = build_program(out, options.reuse, options.update_in_place);
  if (options.memory_plan)
    *options.memory_plan << memory_plan_report(plan_buffers(program), plan_steps(program), program.plan);
  return {std::move(out), std::move(program), passes_ms};
}

}  // namespace kiln::compiler
