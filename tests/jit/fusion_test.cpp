// The compiler between the IR and LLVM: fusion decisions, fused graphs as text,
// the program and its memory plan, and the on-disk kernel cache.
#include <doctest/doctest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>
#include <sys/stat.h>
#include <thread>

#include "cli/run_kiln.h"
#include "cli/temp_dir.h"
#include "compiler/jit/kernel_cache.h"
#include "compiler/jit_executable.h"
#include "compiler/pipeline.h"
#include "differential.h"
#include "engine/autodiff.h"
#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "engine/ir/fusion_kind.h"
#include "engine/ir/op_def.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "text_and_files.h"

using namespace kiln;
using namespace kiln::test;

namespace {

Graph example(const std::string& name) {
  return parse_kir_file(std::string(KILN_SOURCE_DIR) + "/examples/" + name + ".kir");
}

// The example with its joint gradient graph: the loss is its scalar output, or
// the sum of its first output.
Graph with_gradients(const std::string& name) {
  Graph g = example(name);
  Value loss = g.outputs().front();
  if (g.type(loss).rank() > 0) {
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < g.type(loss).rank(); ++a) axes.push_back(a);
    Builder b(g);
    loss = b.emit1("sum", {loss}, {{"axes", axes}});
    b.output(loss);
  }
  for (Value d : grad(g, loss, g.declarations(ValueKind::param)))
    if (d.valid()) g.add_output(d);
  return g;
}

int count_kind(const Graph& g, const std::string& kind) {
  int n = 0;
  for (const Node& node : g.nodes())
    if (node.body && node.attrs.get_string("kind") == kind) ++n;
  return n;
}

compiler::JitOptions cached_in(const std::string& dir) {
  compiler::JitOptions o;
  o.kernels.cache_dir = dir;
  return o;
}

}  // namespace

TEST_CASE("the plain .kir example's attention, written out, is its projections, one attention, one layer norm and "
          "no copies") {
  const compiler::CompiledGraph c = compiler::compile_graph(example("attention"));
  std::map<std::string, int> kernels;  // by label
  for (const compiler::KernelCall& call : c.program.calls) {
    ++kernels[c.program.kernels[call.kernel].label];
    for (size_t a = call.num_inputs; a < call.args.size(); ++a)  // no [batch, heads, T, S] scores
      CHECK(c.program.buffers[static_cast<size_t>(call.args[a])].type.shape != Shape{2, 4, 8, 8});
  }
  // The mask is a constant's kernel; no head split or merge is left to copy.
  // The projections read their weights transposed (pretranspose-weights):
  // those transposes and the mask run once per binding of the params.
  CHECK(kernels == std::map<std::string, int>{{"matmul", 4}, {"flash_attention", 1}, {"layer_norm", 1},
                                              {"causal_mask", 1}, {"transpose", 4}});
  size_t once = 0;
  for (const compiler::KernelCall& call : c.program.calls) once += call.invariant;
  CHECK(once == 5);
}

TEST_CASE("softmax(x * scale + mask) and its backward are one kernel each, and match the interpreter") {
  const Graph g = with_gradients("attention");
  const compiler::CompiledGraph c = compiler::compile_graph(g);
  // Forward: an input fusion around the softmax; backward, y * (dy - sum(dy * y)):
  // a row fusion holding the sum and the sub.
  int softmax_inputs = 0, softmax_backwards = 0;
  for (const Node& node : c.graph.nodes()) {
    if (!node.body) continue;
    const FusionRoles roles = fusion_roles_of(node);
    if (roles.kind == FusionKind::input &&
        node.body->nodes()[static_cast<size_t>(roles.hero)].op() == "softmax")
      ++softmax_inputs;
    if (roles.kind != FusionKind::row) continue;
    bool sum = false, sub = false;
    for (const Node& n : node.body->nodes()) {
      sum = sum || n.op() == "sum";
      sub = sub || n.op() == "sub";
    }
    softmax_backwards += sum && sub;
  }
  CHECK(softmax_inputs == 1);
  CHECK(softmax_backwards == 1);
  check_jit_matches_interpreter(g, example_bindings(g, "attention"), {1e-4, 1e-4});
}

TEST_CASE("row fusion: reductions over the last axis and the loop that broadcasts them, on random shapes") {
  Rng rng(21);
  for (int trial = 0; trial < 12; ++trial) {
    Shape shape = random_shape(rng, 3);
    if (shape.empty()) shape = {5};
    Graph g("row");
    Builder b(g);
    const Value x = b.input("x", {DType::f32, shape});
    const Value y = b.input("y", {DType::f32, shape});
    const int64_t last = static_cast<int64_t>(shape.size()) - 1;
    const Attrs row{{"axes", std::vector<int64_t>{last}}, {"keepdims", true}};
    const Value m = b.emit1("mean", {x}, row);
    const Value centered = b.emit1("sub", {x, m});
    const Value s = b.emit1("sum", {b.emit1("mul", {centered, y})}, row);
    const Value top = b.emit1("max", {y}, row);
    b.output(b.emit1("add", {b.emit1("mul", {centered, s}), b.emit1("sub", {y, top})}));
    CAPTURE(shape_str(shape));
    const compiler::CompiledGraph c = compiler::compile_graph(g);
    CHECK(count_kind(c.graph, "row") == 1);
    CHECK(c.program.calls.size() == 1);
    check_jit_matches_interpreter(g, random_bindings(g, rng, Values::moderate), {1e-4, 1e-4});
  }
}

TEST_CASE("a fused graph prints, parses back to the same text, and the interpreter runs it like the original") {
  for (const char* name : {"mlp", "softmax_classifier", "attention"}) {
    CAPTURE(name);
    const Graph original = example(name);
    const Graph fused = compiler::compile_graph(original).graph;
    const std::string text = print_kir(fused);
    const Graph parsed = parse_kir(text, "fused.kir");
    CHECK(print_kir(parsed) == text);
    const auto bindings = example_bindings(original, name);
    Interpreter a(original), b(parsed);
    for (const auto& [n, t] : bindings) {
      a.bind(n, t);
      b.bind(n, t);
    }
    a.run();
    b.run();
    for (const std::string& out : a.output_names())
      CHECK(compare_tensors(a.output(out), b.output(out), {1e-6, 1e-5}) == "");
  }
}

TEST_CASE("fused kernels match the unfused ones and the interpreter on the examples' joint gradient graphs") {
  for (const char* name : {"mlp", "softmax_classifier", "attention"}) {
    CAPTURE(name);
    const Graph g = with_gradients(name);
    const auto bindings = example_bindings(g, name);
    compiler::JitOptions unfused;
    unfused.pipeline.passes.passes = {"constant-fold", "simplify", "cse", "dce"};
    check_jit_matches_interpreter(g, bindings, {1e-4, 1e-4}, 1, unfused);
    check_jit_matches_interpreter(g, bindings, {1e-4, 1e-4});
  }
}

TEST_CASE("every decision not to fuse has a reason") {
  std::ostringstream decisions;
  compiler::PipelineOptions o;
  o.passes.remarks = &decisions;
  compiler::compile_graph(with_gradients("attention"), o);  // the backward reads the weights: no flash_attention
  // Each node named by its result, op and where the .kir wrote it.
  const std::string text = decisions.str();
  const size_t line = text.find("not fused: %scores (matmul at ");
  REQUIRE(line != std::string::npos);
  const std::string decision = text.substr(line, text.find('\n', line) - line);
  CHECK(decision.find("attention.kir:") != std::string::npos);
  CHECK(decision.find(") into %attn (softmax at ") != std::string::npos);
  CHECK(decision.find("): matmul is a kernel") != std::string::npos);
}

TEST_CASE("the memory plan of the examples passes the independent checker, and --no-reuse changes no output") {
  for (const char* name : {"mlp", "softmax_classifier", "attention"}) {
    CAPTURE(name);
    const Graph g = with_gradients(name);
    const compiler::Program p = compiler::compile_graph(g).program;
    CHECK(compiler::check_memory_plan(compiler::plan_buffers(p), compiler::plan_steps(p), p.plan).empty());
    CHECK(p.plan.arena_bytes <= p.plan.naive_bytes);
    const auto bindings = example_bindings(g, name);
    compiler::JitOptions no_reuse;
    no_reuse.pipeline.reuse = false;
    compiler::JitExecutable planned(g), separate(g, no_reuse);
    for (const auto& [n, t] : bindings) {
      planned.bind(n, t);
      separate.bind(n, t);
    }
    planned.run();
    separate.run();
    for (const std::string& out : planned.output_names())
      CHECK(compare_tensors(planned.output(out), separate.output(out), {0, 0}) == "");
  }
}

// `kiln run examples/attention.kir` with the cache in `cache`; returns the
// --time-passes report and leaves y.npy in `out`.
static std::string run_attention(const TempDir& dir, const std::string& out) {
  const std::string graph = std::string(KILN_SOURCE_DIR) + "/examples/attention.kir";
  const std::string x = std::string(KILN_SOURCE_DIR) + "/examples/inputs/attention/x.npy";
  return "KILN_CACHE_DIR=" + shell_quote(dir.file("cache")) + " " + shell_quote(KILN_BINARY) + " run " +
         shell_quote(graph) + " --input x=" + shell_quote(x) + " -o " + shell_quote(dir.file(out)) +
         " --time-passes >/dev/null 2>" + shell_quote(dir.file(out + ".err"));
}

TEST_CASE("kernel cache: a second process loads every kernel from disk; corrupt and truncated entries are rebuilt") {
  TempDir dir;
  REQUIRE(std::system(run_attention(dir, "first").c_str()) == 0);
  CHECK(read_file(dir.file("first.err")).find("0 from the disk cache") != std::string::npos);
  REQUIRE(std::system(run_attention(dir, "warm").c_str()) == 0);
  CHECK(read_file(dir.file("warm.err")).find(" 0 compiled") != std::string::npos);
  // Damage every entry: flip a byte in half of them, truncate the others.
  bool flip = true;
  for (const auto& e : std::filesystem::directory_iterator(dir.file("cache"))) {
    CHECK(e.path().extension() == ".o");
    std::string bytes = read_file(e.path().string());
    if (flip) bytes[bytes.size() / 2] ^= 0x5a;
    else bytes.resize(bytes.size() / 3);
    std::ofstream(e.path(), std::ios::binary | std::ios::trunc) << bytes;
    flip = !flip;
  }
  REQUIRE(std::system(run_attention(dir, "damaged").c_str()) == 0);
  CHECK(read_file(dir.file("damaged.err")).find("0 from the disk cache") != std::string::npos);
  CHECK(read_file(dir.file("first/y.npy")) == read_file(dir.file("damaged/y.npy")));
  REQUIRE(std::system(run_attention(dir, "rebuilt").c_str()) == 0);
  CHECK(read_file(dir.file("rebuilt.err")).find(" 0 compiled") != std::string::npos);
}

TEST_CASE("kernel cache: an entry that never ends reads as a miss, fast") {
  TempDir dir;
  compiler::KernelCache cache(dir.file("cache"));
  cache.store("kernel", "key", "object");
  CHECK(cache.load("kernel", "key") == "object");
  std::filesystem::create_symlink("/dev/zero", dir.file("cache/endless.o"));
  const auto start = std::chrono::steady_clock::now();
  CHECK_FALSE(cache.load("endless", "key").has_value());
  CHECK(std::chrono::steady_clock::now() - start < std::chrono::seconds(10));
}

TEST_CASE("kernel cache: an unwritable cache directory only turns the cache off") {
  TempDir dir;
  const std::string file = dir.file("not-a-dir");
  std::ofstream(file) << "x";
  compiler::JitOptions o = cached_in(file + "/cache");
  o.target_cpu = "x86-64";
  const Graph g = example("mlp");
  check_jit_matches_interpreter(g, example_bindings(g, "mlp"), {1e-5, 1e-5}, 1, o);
}

TEST_CASE("kernel cache: two processes compiling into one directory at once both work, and a third reads it") {
  TempDir dir;
  CHECK(std::system((run_attention(dir, "a") + " & " + run_attention(dir, "b") + " & wait").c_str()) == 0);
  REQUIRE(std::system(run_attention(dir, "c").c_str()) == 0);
  CHECK(read_file(dir.file("a/y.npy")) == read_file(dir.file("b/y.npy")));
  CHECK(read_file(dir.file("a/y.npy")) == read_file(dir.file("c/y.npy")));
  CHECK(read_file(dir.file("c.err")).find(" 0 compiled") != std::string::npos);
}
