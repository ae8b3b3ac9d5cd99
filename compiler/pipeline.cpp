#include "compiler/pipeline.h"

#include <chrono>
#include <ostream>

#include "compiler/dump_dir.h"
#include "compiler/report/program_json.h"

namespace kiln::compiler {

CompiledGraph compile_graph(const Graph& g, const PipelineOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PassOptions passes = options.passes;
  if (!options.dump_dir.empty()) passes.dump_dir = graph_dump_dir(options.dump_dir, g.name());
  Graph out = run_passes(g, passes);
  const double passes_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  Program program = build_program(out, options.reuse, options.update_in_place, options.invariants);
  if (options.memory_plan || !passes.dump_dir.empty()) {
    const std::string plan = memory_plan_report(plan_buffers(program), plan_steps(program), program.plan);
    if (options.memory_plan) *options.memory_plan << plan;
    if (!passes.dump_dir.empty()) {
      write_dump(passes.dump_dir, "program.txt", print_program(program));
      write_dump(passes.dump_dir, "memory-plan.txt", plan);
      write_dump(passes.dump_dir, "program.json", program_json(program, out).dump() + "\n");
    }
  }
  return {std::move(out), std::move(program), passes_ms, passes.dump_dir};
}

}  // namespace kiln::compiler
