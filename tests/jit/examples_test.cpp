// The example graphs, their joint gradient graphs, and 100 training steps of the
// MLP, through the JIT against the interpreter. Tolerances: abs 1e-4 + rel 1e-4 for values (chains of f32 sums, fast exp/log);
// the training loss trajectory within 1e-4 relative, as issue 4 asks.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "compiler/jit_executable.h"
#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "engine/ir/parser.h"
#include "engine/npy.h"
#include "engine/param_init.h"
#include "jit/differential.h"
#include "models/optimizer.h"
#include "ops/reduction.h"

using namespace kiln;
using namespace kiln::test;

namespace {

namespace fs = std::filesystem;

const fs::path kExamples = fs::path(KILN_SOURCE_DIR) / "examples";

// The graph's scalar f32 output, or the sum of its first output.
Value loss_of(Graph& g) {
  for (Value v : g.outputs())
    if (g.type(v) == TensorType{DType::f32, {}}) return v;
  Builder b(g);
  return ops::sum(b, g.outputs()[0]);
}

std::vector<std::string> example_names() {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(kExamples))
    if (entry.path().extension() == ".kir") names.push_back(entry.path().stem().string());
  std::sort(names.begin(), names.end());
  return names;
}

}  // namespace

TEST_CASE("jit runs the example graphs and their joint gradient graphs like the interpreter") {
  const std::vector<std::string> names = example_names();
  REQUIRE(names.size() >= 3);
  for (const std::string& name : names) {
    Graph g = parse_kir_file((kExamples / (name + ".kir")).string());
    const auto bindings = example_bindings(g, name);
    INFO("example " << name);
    check_jit_matches_interpreter(g, bindings, {1e-4, 1e-4});
    const Value loss = loss_of(g);
    Builder b(g);
    for (Value grad_value : grad(g, loss, g.declarations(ValueKind::param))) b.output(grad_value);
    check_jit_matches_interpreter(g, bindings, {1e-4, 1e-4});
  }
}

TEST_CASE("jit trains the MLP for 100 steps on the interpreter's loss trajectory") {
  for (const bool adam : {false, true}) {
    Graph g = parse_kir_file((kExamples / "mlp.kir").string());
    const auto bindings = example_bindings(g, "mlp");
    const Value loss = *g.find("loss");
    if (adam) {
      AdamOptions opts;
      opts.constant_lr = 1e-3;
      append_adam(g, loss, opts);
    } else {
      append_sgd(g, loss, SgdOptions{0.1});
    }
    const std::string optimizer = adam ? "adam" : "sgd";
    INFO(optimizer);
    Interpreter interp(g);
    compiler::JitExecutable jit(g);
    for (Executable* exe : std::initializer_list<Executable*>{&interp, &jit}) {
      for (const auto& [name, t] : bindings) exe->bind(name, t);
      bind_initial_values(*exe, 0);  // the optimizer's state
    }
    double first = 0, last = 0, worst = 0;
    for (int step = 0; step < 100; ++step) {
      interp.run();
      jit.run();
      const double want = interp.output("loss").f32()(), got = jit.output("loss").f32()();
      worst = std::max(worst, std::fabs(got - want) / std::fabs(want));
      (step == 0 ? first : last) = want;
    }
    MESSAGE(optimizer << ": loss " << first << " -> " << last << ", max relative difference " << worst);
    CHECK(last < first);
    CHECK(worst <= 1e-4);
  }
}
