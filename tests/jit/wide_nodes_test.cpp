// Compile work grows with a node's width, not faster (issue 21): a concat of
// 100,000 operands copies them in a loop over a table of them, an optimizer's
// update of every param is one kernel looping over a table of its parts, the
// AOT entry walks its calls the same way, and a concat wider than a fusion
// takes stays out of fusions. Each is run against the interpreter; "its code
// does not grow" compares the emitted LLVM IR of a narrow and a wide graph,
// tables aside.
#include <doctest/doctest.h>

#include <sstream>

#include "compiler/emit_file.h"
#include "compiler/target/target.h"
#include "compiler/pipeline.h"
#include "differential.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "ops/assign.h"
#include "ops/elementwise.h"
#include "ops/shape_ops.h"

using namespace kiln;
using namespace kiln::test;

namespace {

std::string name(const char* prefix, int i) { return prefix + std::to_string(i); }

// concat(x0, ..., x{n-1}) along `axis`; operand i's axis has lengths[i % size].
Graph wide_concat(int n, DType dtype, const Shape& shape, int64_t axis, const std::vector<int64_t>& lengths) {
  Graph g("wide_concat");
  Builder b(g);
  std::vector<Value> xs;
  for (int i = 0; i < n; ++i) {
    Shape s = shape;
    s[static_cast<size_t>(axis)] = lengths[static_cast<size_t>(i) % lengths.size()];
    xs.push_back(b.input(name("x", i), {dtype, s}));
  }
  b.output(ops::concat(b, xs, axis));
  return g;
}

// Every param p_i (of three shapes in turn) updated to p_i - lr * tanh(p_i): the
// loops an optimizer's step ends with, merged into one horizontal kernel.
Graph param_updates(int n) {
  Graph g("updates");
  Builder b(g);
  const Value lr = b.input("lr", {DType::f32, {}});
  const Shape shapes[] = {{3}, {2, 5}, {7}};
  for (int i = 0; i < n; ++i) {
    const Value p = b.param(name("p", i), {DType::f32, shapes[i % 3]});
    ops::assign(b, p, ops::sub(b, p, ops::mul(b, lr, ops::tanh(b, p))));
  }
  b.output(ops::neg(b, lr));
  return g;
}

// n params, each negated into an output of its own: n kernel calls.
Graph many_outputs(int n) {
  Graph g("outputs");
  Builder b(g);
  for (int i = 0; i < n; ++i) b.output(ops::neg(b, b.param(name("p", i), {DType::f32, {2}})));
  return g;
}

// The lines of optimized LLVM IR that are code: global tables (one line each)
// and the comments naming the module aside.
size_t code_lines(const Graph& g) {
  std::istringstream ir(compiler::emit_graph(g, compiler::detect_target(), compiler::EmitKind::llvm));
  size_t lines = 0;
  for (std::string line; std::getline(ir, line);) lines += !line.starts_with('@') && !line.starts_with(';');
  return lines;
}

// The code of `wide` is no bigger than that of `narrow`, within a few lines:
// LLVM unrolls a short constant loop (the entry's arguments of one call)
// differently from a long one.
void check_code_does_not_grow(const Graph& narrow, const Graph& wide) {
  const size_t narrow_lines = code_lines(narrow), wide_lines = code_lines(wide);
  INFO("narrow: ", narrow_lines, " lines of IR, wide: ", wide_lines);
  CHECK(wide_lines <= narrow_lines + 64);
}

compiler::JitOptions uncached() {
  compiler::JitOptions options;
  options.kernels.cache = false;  // compile every time: the compile is what is tested
  return options;
}

}  // namespace

TEST_CASE("a concat of 100,000 operands compiles in moments and copies them as the interpreter does") {
  const Graph g = wide_concat(100000, DType::f32, {1}, 0, {1});
  Rng rng(21);
  check_jit_matches_interpreter(g, random_bindings(g, rng), {}, 1, uncached());
}

TEST_CASE("an unfused concat is a kernel of its own whose code does not grow with its operands") {
  const compiler::Program program = compiler::compile_graph(wide_concat(2000, DType::f32, {1}, 0, {1})).program;
  REQUIRE(program.kernels.size() == 1);
  CHECK(program.kernels.front().label == "concat");
  CHECK(program.kernels.front().roles.kind == FusionKind::loop);
  check_code_does_not_grow(wide_concat(200, DType::f32, {1}, 0, {1}), wide_concat(20000, DType::f32, {1}, 0, {1}));
}

TEST_CASE("unfused concats copy any dtype along any axis, empty operands included") {
  Rng rng(7);
  for (DType dtype : {DType::f32, DType::i32, DType::boolean}) {
    CAPTURE(dtype_name(dtype));
    for (int64_t axis : {0, 1, 2}) {
      CAPTURE(axis);
      const Graph g = wide_concat(300, dtype, {2, 3, 4}, axis, {1, 0, 2, 3});
      check_jit_matches_interpreter(g, random_bindings(g, rng), {});
    }
  }
}

TEST_CASE("a concat wider than a fusion takes is a kernel of its own, and the decisions say why") {
  for (const int n : {8, 9}) {
    CAPTURE(n);
    Graph g("c");
    Builder b(g);
    std::vector<Value> parts;
    for (int i = 0; i < n; ++i) parts.push_back(ops::neg(b, b.input(name("x", i), {DType::f32, {2, 3}})));
    b.output(ops::tanh(b, ops::concat(b, parts, 1)));
    std::ostringstream decisions;
    compiler::PipelineOptions o;
    o.passes.remarks = &decisions;
    const Graph fused = compiler::compile_graph(g, o).graph;
    size_t concats = 0;
    for (const Node& node : fused.nodes()) concats += node.op() == "concat";
    const bool wide = n > 8;
    CHECK(concats == (wide ? 1 : 0));
    CHECK((decisions.str().find("a concat of 9 operands is a kernel of its own") != std::string::npos) == wide);
    Rng rng(3);
    check_jit_matches_interpreter(g, random_bindings(g, rng), {1e-6, 1e-6});  // tanh: the JIT's own approximation
  }
}

TEST_CASE("a hand-written fusion of a wide concat is refused at compile time, naming it") {
  auto body = std::make_shared<Graph>("f");
  Builder bb(*body);
  std::vector<Value> xs;
  for (int i = 0; i < 9; ++i) xs.push_back(bb.input(name("x", i), {DType::f32, {1}}));
  bb.output(bb.emit1("tanh", {bb.emit1("concat", xs, {{"axis", int64_t{0}}}, "cat")}));
  Graph g("g");
  Builder b(g);
  std::vector<Value> operands;
  for (int i = 0; i < 9; ++i) operands.push_back(b.input(name("y", i), {DType::f32, {1}}));
  b.output(b.emit_fusion(body, operands, {{"kind", "loop"}}, {"out"})[0]);
  compiler::JitOptions options = uncached();
  options.pipeline.passes.passes = {std::string(compiler::kNoPasses)};
  CHECK_THROWS_WITH_AS(compiler::JitExecutable(g, options),
                       doctest::Contains("a concat of 9 operands; a fused concat takes at most 8"), Error);
}

TEST_CASE("updates of 5,000 params are one kernel looping over its parts, in place, as the interpreter") {
  const Graph g = param_updates(5000);
  Rng rng(11);
  auto bindings = random_bindings(g, rng, Values::moderate);
  bindings.at("lr").f32().fill(0.25f);
  check_jit_matches_interpreter(g, bindings, {1e-6, 1e-6}, 2, uncached());
  const compiler::Program& program = compiler::compile_graph(g).program;
  size_t horizontal = 0;
  for (const compiler::Kernel& k : program.kernels) horizontal += k.roles.kind == FusionKind::horizontal;
  CHECK(horizontal == 1);
  REQUIRE(program.assigns.size() == 5000);
  for (const auto& [target, value] : program.assigns)
    CHECK(program.buffers[static_cast<size_t>(value)].alias == target);
  check_code_does_not_grow(param_updates(30), param_updates(1500));
}

TEST_CASE("10,000 outputs compile in moments, and the AOT entry's code does not grow with its calls") {
  const Graph g = many_outputs(10000);
  Rng rng(5);
  check_jit_matches_interpreter(g, random_bindings(g, rng), {}, 1, uncached());
  check_code_does_not_grow(many_outputs(100), many_outputs(4000));
}
