// The joint (forward + backward) graph of every example prints, reparses, verifies and runs.
#include <doctest/doctest.h>

#include <filesystem>

#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "engine/npy.h"
#include "engine/param_init.h"
#include "ops/reduction.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

// The example's scalar f32 output, or the sum of its first f32 output.
Value scalar_loss(Graph& g) {
  for (Value v : g.outputs())
    if (g.type(v) == TensorType{DType::f32, {}}) return v;
  for (Value v : g.outputs()) {
    if (g.type(v).dtype != DType::f32) continue;
    Builder b(g);
    return ops::sum(b, v);
  }
  FAIL("example has no f32 output");
  return {};
}

}  // namespace

TEST_CASE("joint graphs of the examples round-trip and run") {
  int examples = 0;
  for (const auto& entry : fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / "examples")) {
    if (entry.path().extension() != ".kir") continue;
    ++examples;
    const std::string name = entry.path().stem().string();
    INFO("example ", name);
    Graph g = parse_kir_file(entry.path().string());
    const Value loss = scalar_loss(g);
    std::vector<Value> wrt = g.declarations(ValueKind::param);
    for (Value v : g.declarations(ValueKind::input))
      if (g.type(v).dtype == DType::f32) wrt.push_back(v);
    const std::vector<Value> grads = grad(g, loss, wrt);
    Builder b(g);
    for (Value gv : grads) b.output(gv);
    CHECK(verify_problems(g).empty());

    const std::string text = print_kir(g);
    const Graph reparsed = parse_kir(text, name + ".joint.kir");
    CHECK(print_kir(reparsed) == text);

    Interpreter exe(reparsed);
    for (const auto& input : fs::directory_iterator(fs::path(KILN_SOURCE_DIR) / "examples" / "inputs" / name))
      exe.bind(input.path().stem().string(), load_npy(input.path().string()));
    bind_initial_values(exe, 3);
    exe.run();
    for (size_t i = 0; i < wrt.size(); ++i) {
      const Tensor& t = exe.output(g.name_of(grads[i]));
      CHECK(t.type() == g.type(wrt[i]));
      CHECK(xt::all(xt::isfinite(t.f32())));
    }
  }
  CHECK(examples >= 3);
}
