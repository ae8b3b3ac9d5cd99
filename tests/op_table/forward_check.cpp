#include "forward_check.h"

#include <doctest/doctest.h>

#include "compiler/runtime/kiln_runtime.h"
#include "engine/interpreter.h"
#include "op_graph.h"

namespace kiln::test {
namespace {

// Every output, then every final param and state value, of the last run.
std::vector<Tensor> results(const Executable& exe, const Graph& g) {
  std::vector<Tensor> out;
  for (Value v : g.outputs()) out.push_back(exe.output(g.name_of(v)));
  for (Value v : g.declarations())
    if (g.value(v).kind != ValueKind::input) out.push_back(exe.binding(g.name_of(v)));
  return out;
}

}  // namespace

compiler::JitOptions unfused_options(const std::string& target_cpu) {
  compiler::JitOptions options;
  options.target_cpu = target_cpu;
  options.pipeline.passes.passes = {"dce"};
  return options;
}

Graph check_forward(const OpInfo& row, const Sample& s, const Graph& g, const compiler::JitOptions& options) {
  const std::map<std::string, Tensor> bindings = sample_bindings(g, s);
  Interpreter interp(g);
  compiler::JitExecutable jit(g, options);
  for (const auto& [name, t] : bindings) {
    interp.bind(name, t);
    jit.bind(name, t);
  }
  interp.run();
  const std::vector<Tensor> expected = results(interp, g);
  std::vector<std::vector<Tensor>> runs;
  for (int threads : {1, 2}) {
    for (const auto& [name, t] : bindings) jit.bind(name, t);  // params and state start over
    kiln_set_num_threads(threads);
    jit.run();
    runs.push_back(results(jit, g));
  }
  kiln_set_num_threads(0);
  for (size_t i = 0; i < expected.size(); ++i) {
    INFO("result " << i);
    for (size_t run = 0; run < runs.size(); ++run) {
      INFO("threads " << run + 1);
      CHECK((row.compare ? row.compare(s, i, expected[i], runs[run][i])
                         : compare_tensors(expected[i], runs[run][i], row.tolerance)) == "");
    }
    INFO("1 thread against 2");
    CHECK(compare_tensors(runs[0][i], runs[1][i], {0, 0}) == "");
  }
  return jit.compiled().graph;
}

bool fused_into_kernel(const Graph& compiled, const std::string& op) {
  for (const Node& n : compiled.nodes())
    if (n.body)
      for (const Node& m : n.body->nodes())
        if (m.op() == op) return true;
  return false;
}

}  // namespace kiln::test
