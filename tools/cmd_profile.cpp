// `kiln profile FILE.kir`: runs a graph with the JIT, every kernel call timed,
// prints where the time goes by kernel or by model scope (tools/profile_table.h) and writes a Chrome trace.
#include <iostream>

#include "compiler/profile.h"
#include "compiler/report/dump_profile.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/atomic_file.h"
#include "engine/ir/parser.h"
#include "engine/param_init.h"
#include "tools/cli_common.h"
#include "tools/profile_table.h"
#include "tools/same_file.h"

namespace kiln::cli {

std::unique_ptr<compiler::JitExecutable> profiled_runs(Graph g, const ProfileOptions& opts) {
  compiler::JitOptions jit;
  jit.target_cpu = opts.exec.target_cpu;
  jit.pipeline = opts.exec.pipeline;
  jit.kernels = opts.exec.kernels;
  auto exe = std::make_unique<compiler::JitExecutable>(std::move(g), jit);
  bind_inputs(*exe, opts.inputs);
  const Graph& graph = exe->graph();
  for (Value v : graph.declarations(ValueKind::input))  // the time does not depend on the values
    if (!exe->is_bound(graph.name_of(v))) exe->bind(graph.name_of(v), Tensor::zeros(graph.type(v)));
  bind_initial_values(*exe, opts.seed);
  if (opts.exec.threads > 0) kiln_set_num_threads(opts.exec.threads);
  exe->run();  // warm-up: the pool's threads, the caches, the arena
  exe->profile(true);
  for (int64_t step = 0; step < opts.steps; ++step) exe->run();
  exe->profile(false);
  return exe;
}

void profile(const ProfileOptions& opts) {
  std::vector<FlagPath> inputs{{"FILE", opts.graph_path}};
  for (const std::string& arg : opts.inputs) {
    const auto [name, path] = split_binding(arg);
    inputs.push_back({"--input " + name + "=", path});
  }
  check_output_is_no_input({"--trace", opts.trace_path}, inputs);
  const auto exe = profiled_runs(parse_kir_file(opts.graph_path), opts);
  const compiler::Program& p = exe->compiled().program;
  if (opts.by == "scope")
    print_scope_table(p, exe->run_profile(), opts.depth, std::cout);
  else
    print_profile_table(p, exe->run_profile(), kiln_num_threads(), std::cout);
  if (!exe->compiled().dump_dir.empty())
    compiler::record_profile_in_dump(exe->compiled().dump_dir, p, exe->run_profile());
  write_file_atomically(opts.trace_path, compiler::chrome_trace(p, exe->run_profile()));
  std::cout << "trace (chrome://tracing, ui.perfetto.dev): " << opts.trace_path << '\n';
}

}  // namespace kiln::cli
