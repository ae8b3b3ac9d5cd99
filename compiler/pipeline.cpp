#include "compiler/pipeline.h"

#include <chrono>
#include <ostream>

#include "compiler/dump_dir.h"
#include "compiler/report/program_json.h"
#include "engine/ir/error.h"

namespace kiln::compiler {

namespace {

// The passes that give the default pipeline's arithmetic `precision`, in order.
std::vector<std::string> precision_passes(DType precision) {
  if (precision == DType::f32) return {};
  if (precision == DType::bf16) return {kBf16Passes.begin(), kBf16Passes.end()};
  throw Error("no precision " + std::string(dtype_name(precision)) + " (f32 or bf16)");
}

}  // namespace

std::vector<std::string> pipeline_passes(const PassOptions& options, const PassRegistry& registry) {
  if (!options.passes.empty()) return options.passes;
  std::vector<std::string> names = registry.default_pipeline();
  const std::vector<std::string> precision = precision_passes(options.precision);
  names.insert(names.begin() + static_cast<std::ptrdiff_t>(registry.end_of_rewrites()), precision.begin(),
               precision.end());
  return names;
}

Graph run_pipeline_passes(const Graph& g, const PassOptions& options) {
  PassOptions named = options;
  named.passes = pipeline_passes(options);
  return run_passes(g, named);
}

Graph with_precision(const Graph& g, DType precision) {
  const std::vector<std::string> passes = precision_passes(precision);
  if (passes.empty()) return g;
  const PassRegistry& registry = PassRegistry::global();
  const std::vector<std::string>& pipeline = registry.default_pipeline();
  std::vector<std::string> names(pipeline.begin(),
                                 pipeline.begin() + static_cast<std::ptrdiff_t>(registry.end_of_rewrites()));
  names.insert(names.end(), passes.begin(), passes.end());
  Graph out = g;
  for (const std::string& name : names) out = registry.get(name).run(out, nullptr);
  return out;
}

CompiledGraph compile_graph(const Graph& g, const PipelineOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  PassOptions passes = options.passes;
  if (!options.dump_dir.empty()) passes.dump_dir = graph_dump_dir(options.dump_dir, g.name());
  Graph out = run_pipeline_passes(g, passes);
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
