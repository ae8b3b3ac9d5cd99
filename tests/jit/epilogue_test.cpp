// Matmul epilogue fusion (compiler/passes/fusion.h): a matmul's pointwise loop
// consumers (bias, scale, relu, residual, dropout and chains of them) run inside
// its kernel, applied to each panel of C in its last K block.
//
// Tolerance: the inputs are small integers, so every product and partial sum of
// the GEMM is exact in f32 whatever the order, and the epilogues below (adds,
// scaling by 0.5, relu, maximum, dropout's scaling by 1/(1-rate) = 2) round the
// same way in both backends: the JIT must match the interpreter bit for bit.
#include <doctest/doctest.h>

#include <array>
#include <functional>
#include <sstream>

#include "compiler/pipeline.h"
#include "differential.h"
#include "engine/ir/builder.h"
#include "ops/assign.h"
#include "ops/constant.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/reduction.h"
#include "ops/shape_ops.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// x [x_batch.., M, K] (stored K x M when ta), w [w_batch.., K, N] (N x K when tb);
// the result [batch.., M, N] with the broadcast batch dims.
struct Problem {
  Shape x_batch, w_batch, batch;
  int64_t m = 1, k = 1, n = 1;
  bool ta = false, tb = false;

  Shape x() const { return stored(x_batch, m, k, ta); }
  Shape w() const { return stored(w_batch, k, n, tb); }
  Shape out() const {
    Shape s = batch;
    s.push_back(m);
    s.push_back(n);
    return s;
  }
  static Shape stored(Shape s, int64_t rows, int64_t cols, bool transposed) {
    s.push_back(transposed ? cols : rows);
    s.push_back(transposed ? rows : cols);
    return s;
  }
};

std::string describe(const Problem& p) {
  std::ostringstream os;
  os << "x " << shape_str(p.x()) << (p.ta ? "^T" : "") << " w " << shape_str(p.w()) << (p.tb ? "^T" : "");
  return os.str();
}

// Sizes around the vector widths, the register tile and the K block (256).
Problem random_problem(Rng& rng) {
  const std::vector<int64_t> mn = {1, 3, 7, 8, 16, 17, 33, 70, 130};
  const std::vector<int64_t> ks = {1, 5, 32, 100, 257, 300};
  Problem p;
  p.m = rng.pick(mn);
  p.n = rng.pick(mn);
  p.k = rng.pick(ks);
  p.ta = rng.coin();
  p.tb = rng.coin();
  switch (rng.uniform(0, 3)) {
    case 0:
      break;
    case 1:
      p.x_batch = p.batch = {2};
      break;
    case 2:  // w broadcast over x's batch
      p.x_batch = p.batch = {2, 3};
      break;
    default:  // both broadcast
      p.x_batch = {2, 1};
      p.w_batch = {3};
      p.batch = {2, 3};
  }
  return p;
}

// Integers in [-3, 3] as f32 (see the tolerance note), i32 keys as they come.
std::map<std::string, Tensor> integer_bindings(const Graph& g, Rng& rng) {
  std::map<std::string, Tensor> bindings = random_bindings(g, rng);
  for (auto& [name, t] : bindings)
    if (t.dtype() == DType::f32)
      for (float& v : t.f32()) v = static_cast<float>(rng.uniform(-3, 3));
  return bindings;
}

int matmul_kernels(const Graph& g) {
  int n = 0;
  const compiler::CompiledGraph c = compiler::compile_graph(g);
  for (const Node& node : c.graph.nodes())
    if (node.body && node.attrs.get_string("kind") == "epilogue") ++n;
  return n;
}

using Epilogue = std::function<Value(Builder& b, Value mm, const Problem& p)>;

Graph epilogue_graph(const Problem& p, const Epilogue& epilogue) {
  Graph g("epilogue");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, p.x()});
  const Value w = b.input("w", {DType::f32, p.w()});
  b.output(epilogue(b, ops::matmul(b, x, w, p.ta, p.tb), p));
  return g;
}

void check(const Graph& g, Rng& rng, int expected_matmul_kernels, const compiler::JitOptions& options = {}) {
  CHECK(matmul_kernels(g) == expected_matmul_kernels);
  check_jit_matches_interpreter(g, integer_bindings(g, rng), {0, 0}, 1, options);
}

Value bias(Builder& b, const Problem& p, const std::string& name = "bias") {
  return b.input(name, {DType::f32, {p.n}});
}
Value residual(Builder& b, const Problem& p) { return b.input("residual", {DType::f32, p.out()}); }

}  // namespace

TEST_CASE("a matmul fuses its bias, scale, relu, residual, dropout and chains of them, bit for bit") {
  const std::vector<std::pair<const char*, Epilogue>> epilogues = {
      {"relu(mm + bias)",
       [](Builder& b, Value mm, const Problem& p) { return ops::relu(b, ops::add(b, mm, bias(b, p))); }},
      {"mm * 0.5", [](Builder& b, Value mm, const Problem&) { return ops::mul(b, mm, ops::fill(b, {}, 0.5)); }},
      {"residual + mm", [](Builder& b, Value mm, const Problem& p) { return ops::add(b, residual(b, p), mm); }},
      {"maximum(mm * 0.5 + bias, 0) + residual",
       [](Builder& b, Value mm, const Problem& p) {
         const Value scaled = ops::add(b, ops::mul(b, mm, ops::fill(b, {}, 0.5)), bias(b, p));
         return ops::add(b, ops::maximum(b, scaled, ops::fill(b, {}, 0.0)), residual(b, p));
       }},
      {"residual + dropout(mm + bias)",
       [](Builder& b, Value mm, const Problem& p) {
         const Value key = b.input("key", {DType::i32, {}});
         return ops::add(b, residual(b, p), ops::dropout(b, ops::add(b, mm, bias(b, p)), key, 0.5, 7));
       }},
  };
  // The host, AVX2 (8 lanes, a 6 x 16 tile) and SSE2 (4 lanes): other tiles and remainders.
  const std::vector<std::string> cpus = {"", "haswell", "x86-64"};
  Rng rng(20261123);
  for (int i = 0; i < 45; ++i) {
    const Problem p = random_problem(rng);
    const auto& [name, epilogue] = epilogues[static_cast<size_t>(i) % epilogues.size()];
    const std::string& cpu = cpus[static_cast<size_t>(i) % cpus.size()];
    CAPTURE(name);
    CAPTURE(cpu);
    CAPTURE(describe(p));
    check(epilogue_graph(p, epilogue), rng, 1, jit_for_cpu(cpu));
  }
}

TEST_CASE("an epilogue after an empty sum (K = 0) still runs") {
  Rng rng(1);
  Problem p;
  p.m = 5;
  p.n = 19;
  p.k = 0;
  p.x_batch = p.batch = {2};
  check(epilogue_graph(p, [](Builder& b, Value mm, const Problem& q) { return ops::add(b, mm, bias(b, q)); }), rng, 1);
}

TEST_CASE("an epilogue operand computed after the matmul fuses; one the matmul also reads stays in memory") {
  Rng rng(2);
  Problem p;
  p.m = 17;
  p.k = p.n = 33;
  // neg(y) comes after the matmul in node order and is computed in the epilogue.
  check(epilogue_graph(p,
                       [](Builder& b, Value mm, const Problem& q) {
                         return ops::add(b, mm, ops::neg(b, b.input("y", {DType::f32, q.out()})));
                       }),
        rng, 1);
  // x2 = x + x feeds the matmul (from memory) and the epilogue.
  Graph g("shared_operand");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, p.x()});
  const Value x2 = ops::add(b, x, x);
  b.output(ops::relu(b, ops::add(b, ops::matmul(b, x2, b.input("w", {DType::f32, p.w()})), x2)));
  check(g, rng, 1);
}

TEST_CASE("a matmul keeps its own kernel when its result is needed elsewhere or read at other indices") {
  Rng rng(3);
  Problem p;
  p.m = 17;
  p.k = 9;
  p.n = 17;
  p.batch = p.x_batch = {2};
  struct Case {
    const char* name;
    std::function<void(Builder&, Value)> build;
    const char* reason;  // in the fusion decisions
  };
  const std::vector<Case> cases = {
      {"used twice",
       [&](Builder& b, Value mm) {
         b.output(ops::relu(b, mm));
         b.output(ops::mul(b, mm, ops::fill(b, {}, 2.0)));
       },
       "matmul is a kernel of its own: its result is also used outside this loop"},
      {"an output",
       [&](Builder& b, Value mm) {
         b.output(mm);
         b.output(ops::relu(b, ops::add(b, mm, bias(b, p))));
       },
       "matmul is a kernel of its own: its result is stored for an assign or output"},
      {"transposed by its consumer",
       [&](Builder& b, Value mm) {
         b.output(ops::add(b, ops::transpose(b, mm, {0, 2, 1}), bias(b, p)));
       },
       "(transpose) reads its result at other indices than its own"},
      {"broadcast by its consumer",
       [&](Builder& b, Value mm) {
         b.output(ops::add(b, mm, b.input("z", {DType::f32, {3, 2, p.m, p.n}})));
       },
       "(add) reads its result at other indices than its own"},
      {"under a reduction", [&](Builder& b, Value mm) { b.output(ops::sum(b, ops::relu(b, mm), {2})); },
       "matmul is a kernel of its own: sum reads its result from memory"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.name);
    Graph g("no_epilogue");
    Builder b(g);
    c.build(b, ops::matmul(b, b.input("x", {DType::f32, p.x()}), b.input("w", {DType::f32, p.w()})));
    check(g, rng, 0);
    std::ostringstream decisions;
    compiler::PipelineOptions o;
    o.passes.remarks = &decisions;
    compiler::compile_graph(g, o);
    CHECK(decisions.str().find(c.reason) != std::string::npos);
  }
}

namespace {

// An optimizer's step on param w [K, N] whose gradient is x^T dy (x [M, K], dy
// [M, N]), the way Adam is written (models/optimizer.cpp): the moments m, v and
// w are assigned. `read_after` adds a product that reads w after the gradient
// (a backward pass's dy w^T), `accumulate` adds the gradient to a state first.
Graph update_graph(const Problem& p, bool read_after, bool accumulate) {
  Graph g("update");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {p.m, p.k}});
  const Value dy = b.input("dy", {DType::f32, {p.m, p.n}});
  const TensorType type{DType::f32, {p.k, p.n}};
  const Value w = b.param("w", type), m = b.state("m", type), v = b.state("v", type);
  const Value rate = b.input("rate", {DType::f32, {}});
  Value grad = ops::matmul(b, x, dy, true, false);
  if (read_after) b.output(ops::matmul(b, dy, w, false, true));
  if (accumulate) {
    const Value acc = b.state("acc", type);
    grad = ops::add(b, acc, grad);
    ops::assign(b, acc, ops::fill(b, type.shape, 0.0));
  }
  const auto half = [&](Value a) { return ops::mul(b, ops::fill(b, {}, 0.5), a); };
  const Value m_new = ops::add(b, half(m), half(grad));
  const Value v_new = ops::add(b, half(v), half(ops::mul(b, grad, grad)));
  const Value denom = ops::add(b, ops::sqrt(b, v_new), ops::fill(b, {}, 1.0));
  ops::assign(b, w, ops::sub(b, w, ops::mul(b, rate, ops::div(b, m_new, denom))));
  ops::assign(b, m, m_new);
  ops::assign(b, v, v_new);
  return g;
}

}  // namespace

TEST_CASE(
    "an optimizer's update fuses into its gradient's matmul, writes the param and moments in place, and "
    "matches the interpreter over steps") {
  Rng rng(4);
  const std::vector<std::string> cpus = {"", "haswell", "x86-64"};
  for (int i = 0; i < 12; ++i) {
    Problem p = random_problem(rng);
    p.x_batch = p.w_batch = p.batch = {};
    p.ta = true;
    p.tb = false;
    const bool read_after = i % 2 == 1, accumulate = i % 3 == 2;
    CAPTURE(describe(p));
    CAPTURE(read_after);
    CAPTURE(accumulate);
    const Graph g = update_graph(p, read_after, accumulate);
    const compiler::CompiledGraph c = compiler::compile_graph(g);
    // One epilogue kernel: the gradient (stored) and the three updates.
    int epilogues = 0;
    for (const Node& n : c.graph.nodes())
      if (n.body && n.attrs.get_string("kind") == "epilogue") {
        ++epilogues;
        CHECK(n.results.size() == 4);
      }
    CHECK(epilogues == 1);
    // Run after the product that still reads w, so w, m and v are written in
    // place (the accumulator, assigned zeros, is not the epilogue's).
    for (const auto& [target, value] : c.program.assigns)
      if (c.program.buffers[static_cast<size_t>(target)].name != "acc")
        CHECK(c.program.buffers[static_cast<size_t>(value)].alias == target);
    // The gradient's sums are of integers (exact), but once w is updated the
    // product that reads it sums in another order than the interpreter's, and
    // FMA contraction may round the updates' products once instead of twice.
    check_jit_matches_interpreter(g, integer_bindings(g, rng), {1e-6, 1e-6, 1e-6}, 3,
                                  jit_for_cpu(cpus[static_cast<size_t>(i) % cpus.size()]));
  }
}

TEST_CASE("a bias gradient, the column sums of dy beside x^T dy, is summed as the GEMM packs dy") {
  // Shapes around the K block (256 rows of dy), the N block (256 columns) and
  // the M blocks (224 rows of x^T), so sums span K blocks and threads share
  // N blocks; the host, AVX2 and SSE2.
  const std::vector<std::array<int64_t, 3>> shapes = {
      // tokens (k), x's width (m), dy's width (n)
      {1, 1, 1}, {7, 3, 33}, {257, 17, 40}, {300, 230, 270}, {1024, 64, 300}, {513, 450, 31}};
  const std::vector<std::string> cpus = {"", "haswell", "x86-64"};
  Rng rng(5);
  for (size_t i = 0; i < shapes.size(); ++i) {
    const auto [k, m, n] = shapes[i];
    CAPTURE(k);
    CAPTURE(m);
    CAPTURE(n);
    for (const bool update : {false, true}) {
      CAPTURE(update);
      Graph g("linear_grads");
      Builder b(g);
      const Value x = b.input("x", {DType::f32, {k, m}});
      const Value dy = b.input("dy", {DType::f32, {k, n}});
      // The sums are read after the epilogue's root (its position).
      const Value dw = ops::matmul(b, x, dy, true, false);
      if (update) {  // an SGD step on w in the epilogue: the product stored
        const Value w = b.param("w", {DType::f32, {m, n}});
        ops::assign(b, w, ops::sub(b, w, ops::mul(b, ops::fill(b, {}, 0.5), dw)));
      } else {
        b.output(ops::relu(b, dw));
      }
      b.output(ops::reshape(b, ops::sum(b, dy, {0}, true), {n}));  // the bias gradient
      const compiler::CompiledGraph c = compiler::compile_graph(g);
      int sums = 0;
      for (const Node& node : c.graph.nodes()) sums += node.op() == "sum";
      CHECK(sums == 0);  // inside the matmul's epilogue kernel
      CHECK(matmul_kernels(g) == 1);
      // Integers: the GEMM's sums and the column sums (f64, rounded once) are exact.
      check_jit_matches_interpreter(g, integer_bindings(g, rng), {0, 0}, 2, jit_for_cpu(cpus[i % cpus.size()]));
    }
  }
}

TEST_CASE("column sums of dy read before the matmul's kernel runs, or of a transposed dy, stay kernels of their own") {
  Rng rng(6);
  // Read before: a loop on the sums comes before the matmul in node order.
  Graph g("read_before");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {40, 9}});
  const Value dy = b.input("dy", {DType::f32, {40, 12}});
  b.output(ops::mul(b, ops::sum(b, dy, {0}, true), ops::fill(b, {}, 2.0)));
  b.output(ops::relu(b, ops::matmul(b, x, dy, true, false)));
  std::ostringstream decisions;
  compiler::PipelineOptions o;
  o.passes.remarks = &decisions;
  compiler::compile_graph(g, o);
  CHECK(decisions.str().find("it is read before %") != std::string::npos);
  check_jit_matches_interpreter(g, integer_bindings(g, rng), {0, 0});
  // dy stored n x k (transpose_b): its packing runs along k, not along the sums.
  Graph t("transposed");
  Builder bt(t);
  const Value xt = bt.input("x", {DType::f32, {40, 9}});
  const Value dyt = bt.input("dy", {DType::f32, {12, 40}});
  bt.output(ops::sum(bt, dyt, {0}, true));
  bt.output(ops::relu(bt, ops::matmul(bt, xt, dyt, true, true)));
  int sums = 0;
  const compiler::CompiledGraph ct = compiler::compile_graph(t);
  for (const Node& node : ct.graph.nodes()) sums += node.op() == "sum";
  CHECK(sums == 1);
  check_jit_matches_interpreter(t, integer_bindings(t, rng), {0, 0});
}
