// matmul's GEMM against the interpreter: every transpose flag combination, shapes
// around the register tile and cache blocks of the host's GemmBlocking (1, MR+-1,
// NR+-1, KC+-1, MC+1, NC+1, primes), batch dims broadcast either way, non-finite
// entries, and thread-count independence. Empty products and small random
// shapes, alone and fused, are the op table's row (tests/op_table/rows_matmul.cpp).
//
// Tolerance: both backends add the k products of an element in k order in f32;
// the reference rounds each product and each sum, the JIT fuses them
// (llvm.fmuladd). Each result is then within gamma_k * S of the exact sum, where
// S = sum_k |a_ik| |b_kj| and gamma_k = k eps / (1 - k eps) (Higham, Accuracy and
// Stability, 3.1), so the two differ by at most 2 gamma_k S. The tests compute S
// per element (the interpreter on |A| and |B|) and allow 2.02 k eps S: a bound
// that a wrong index or a lost block breaks by orders of magnitude. Where the
// inputs are small integers every product and partial sum is exact in f32, and
// the results must match bit for bit.
#include "ops/matmul.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <cfloat>
#include <cmath>
#include <sstream>
#include <utility>

#include "compiler/codegen/gemm.h"
#include "compiler/target/target.h"
#include "compiler/pipeline.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "engine/ir/printer.h"
#include "jit/differential.h"
#include "ops/elementwise.h"

using namespace kiln;
using namespace kiln::test;

namespace {

struct Case {
  Shape a, b;  // operand shapes as stored (already transposed where the flag is set)
  bool ta = false, tb = false;
  DType operands = DType::f32;  // or bf16 (C is f32 either way)
  bool cast = false;            // f32 inputs cast to bf16 in the graph (the GEMM rounds them as it packs)
};

// The stored shape of an operand whose op() is rows x cols with batch dims in front.
Shape stored(const Shape& batch, int64_t rows, int64_t cols, bool transposed) {
  Shape s = batch;
  s.push_back(transposed ? cols : rows);
  s.push_back(transposed ? rows : cols);
  return s;
}

Case make_case(int64_t m, int64_t k, int64_t n, bool ta, bool tb, const Shape& a_batch = {},
               const Shape& b_batch = {}) {
  return {stored(a_batch, m, k, ta), stored(b_batch, k, n, tb), ta, tb};
}

Case bf16_case(int64_t m, int64_t k, int64_t n, bool ta, bool tb) {
  Case c = make_case(m, k, n, ta, tb);
  c.operands = DType::bf16;
  return c;
}

Graph matmul_graph(const Case& c) {
  Graph g("matmul");
  Builder b(g);
  const DType stored = c.cast ? DType::f32 : c.operands;
  Value a = b.input("a", {stored, c.a}), bm = b.input("b", {stored, c.b});
  if (c.cast) {
    a = ops::cast(b, a, DType::bf16);
    bm = ops::cast(b, bm, DType::bf16);
  }
  b.output(ops::matmul(b, a, bm, c.ta, c.tb));
  return g;
}

const Tensor& run(Executable& exe, const Tensor& a, const Tensor& b) {
  exe.bind("a", a);
  exe.bind("b", b);
  exe.run();
  return exe.output(exe.output_names().at(0));
}

Tensor absolute(const Tensor& t) {
  Tensor out = t;
  if (t.dtype() == DType::bf16) {
    for (bfloat16& v : out.bf16()) v.bits &= 0x7fff;
    return out;
  }
  for (float& v : out.f32()) v = std::fabs(v);
  return out;
}

// An f32 tensor's values rounded to `t` (f32 or bf16).
Tensor as_operand(const Tensor& f, DType t) {
  if (t == DType::f32) return f;
  xt::xarray<bfloat16> out = xt::xarray<bfloat16>::from_shape(f.f32().shape());
  std::transform(f.f32().begin(), f.f32().end(), out.begin(), [](float v) { return bfloat16(v); });
  return Tensor(std::move(out));
}

std::string describe(const Case& c) {
  std::ostringstream os;
  os << (c.cast ? "f32 cast to " : "") << dtype_name(c.operands) << " a " << shape_str(c.a) << (c.ta ? "^T" : "")
     << " b " << shape_str(c.b) << (c.tb ? "^T" : "");
  return os.str();
}

// JIT against interpreter on `a`, `b`: within 2.02 k eps S (exact when `exact`),
// non-finite results identical.
void check_values(const Case& c, const Tensor& a, const Tensor& b, bool exact,
                  const compiler::JitOptions& options = {}) {
  INFO(describe(c));
  const Graph g = matmul_graph(c);
  Interpreter interp(g);
  compiler::JitExecutable jit(g, options);
  const Tensor expected = run(interp, a, b);
  const Tensor& actual = run(jit, a, b);
  REQUIRE(actual.type() == expected.type());
  const Tensor magnitude = run(interp, absolute(a), absolute(b));  // S per element
  const int64_t k = c.ta ? c.a[c.a.size() - 2] : c.a.back();
  const double bound = exact ? 0 : 2.02 * static_cast<double>(k) * FLT_EPSILON;
  int64_t bad = 0;
  std::string first;
  for (size_t i = 0; i < static_cast<size_t>(expected.numel()); ++i) {
    const float e = expected.f32().data()[i], x = actual.f32().data()[i];
    const bool ok = std::isfinite(e) ? std::fabs(static_cast<double>(e) - x) <= bound * magnitude.f32().data()[i]
                                     : (std::isnan(e) ? std::isnan(x) : e == x);
    if (ok) continue;
    if (bad++ == 0) {
      std::ostringstream os;
      os << "element " << i << ": expected " << e << ", got " << x << ", S " << magnitude.f32().data()[i];
      first = os.str();
    }
  }
  INFO(first);
  CHECK(bad == 0);
}

void check_random(Rng& rng, const Case& c, const compiler::JitOptions& options = {}) {
  const DType stored = c.cast ? DType::f32 : c.operands;
  check_values(c, as_operand(random_tensor(rng, {DType::f32, c.a}), stored),
               as_operand(random_tensor(rng, {DType::f32, c.b}), stored), false, options);
}

Tensor small_integers(Rng& rng, const Shape& s) { return random_tensor(rng, {DType::f32, s}, Values::integers); }

compiler::GemmBlocking host_blocking() { return compiler::gemm_blocking(compiler::detect_target().vector_width); }

constexpr bool kFlags[4][2] = {{false, false}, {true, false}, {false, true}, {true, true}};

}  // namespace

TEST_CASE("jit matmul of a hand-computed 2x3 by 3x2 product") {
  // [[1 2 3] [4 5 6]] x [[7 8] [9 10] [11 12]] = [[58 64] [139 154]]
  const Case c = make_case(2, 3, 2, false, false);
  compiler::JitExecutable jit(matmul_graph(c));
  Tensor a = Tensor::zeros({DType::f32, {2, 3}}), b = Tensor::zeros({DType::f32, {3, 2}});
  for (int i = 0; i < 6; ++i) {
    a.f32().data()[i] = static_cast<float>(i + 1);
    b.f32().data()[i] = static_cast<float>(i + 7);
  }
  const Tensor& y = run(jit, a, b);
  CHECK(y.f32()(0, 0) == 58.0f);
  CHECK(y.f32()(0, 1) == 64.0f);
  CHECK(y.f32()(1, 0) == 139.0f);
  CHECK(y.f32()(1, 1) == 154.0f);
}

TEST_CASE("jit matmul with every transpose flag on shapes around the register tile") {
  const compiler::GemmBlocking g = host_blocking();
  const int64_t mr = g.mr, nr = g.nr;
  Rng rng(31);
  const std::vector<std::array<int64_t, 3>> mkn = {
      {1, 1, 1},          {1, 7, 1},          {mr - 1, 5, nr - 1}, {mr, 3, nr},     {mr + 1, 9, nr + 1},
      {2 * mr + 3, 1, 2}, {3, 2, 2 * nr + 5}, {97, 31, 1},         {1, 33, 97},     {5, 97, 17},
      {97, 16, 97},       {mr + 1, 17, 1},    {1, 1, nr + 1},      {2, 15, g.w + 1}};
  for (const auto& [m, k, n] : mkn)
    for (const auto& [ta, tb] : kFlags) check_random(rng, make_case(m, k, n, ta, tb));
}

TEST_CASE("jit matmul on AVX2 and SSE targets with their own register tiles") {
  // haswell: 8 lanes and FMA (a 6 x 16 tile); nehalem: 4 lanes, no FMA (6 x 8,
  // fmuladd becomes a multiply and an add, still within the bound).
  Rng rng(38);
  for (const auto& [cpu, lanes] : {std::pair{"haswell", 8}, {"nehalem", 4}}) {
    INFO("target cpu " << cpu);
    REQUIRE(compiler::detect_target(cpu).vector_width == lanes);
    const compiler::GemmBlocking g = compiler::gemm_blocking(lanes);
    const std::vector<std::array<int64_t, 3>> mkn = {
        {1, 1, 1}, {g.mr + 1, 9, g.nr + 1}, {g.mr - 1, g.kc + 1, g.nr - 1}, {97, 33, 2 * g.nr + 3}, {g.mc + 1, 7, 5}};
    for (const auto& [m, k, n] : mkn)
      for (const auto& [ta, tb] : kFlags) check_random(rng, make_case(m, k, n, ta, tb), jit_for_cpu(cpu));
  }
}

TEST_CASE("jit matmul of a few rows, B stored n x k read in place (gemm_rows), on every target") {
  // Rows up to kGemmRowsMaxM and one past it (the packed GEMM), k around the
  // vector widths and past a K block, columns around the tiles and work units;
  // batch dims broadcast; every flag (only A as is and B transposed take gemm_rows).
  Rng rng(39);
  const std::vector<std::array<int64_t, 3>> mkn = {{1, 1, 1},    {3, 7, 5},     {4, 8, 17},   {16, 128, 1000},
                                                   {31, 33, 97}, {32, 300, 64}, {33, 16, 40}, {2, 300, 3}};
  for (const char* cpu : {"", "haswell", "nehalem"}) {
    INFO("target cpu " << (*cpu ? cpu : "host"));
    for (const auto& [ta, tb] : kFlags) {
      for (const auto& [m, k, n] : mkn) check_random(rng, make_case(m, k, n, ta, tb), jit_for_cpu(cpu));
      check_random(rng, make_case(5, 9, 23, ta, tb, {3}, {1}), jit_for_cpu(cpu));
      check_random(rng, make_case(5, 9, 23, ta, tb, {1}, {2}), jit_for_cpu(cpu));
    }
  }
}

// The host, AVX2 and SSE; and where the host has avx512_bf16, znver4, whose
// GEMMs use vdpbf16ps (on an Intel host the host target widens instead).
std::vector<const char*> bf16_targets() {
  std::vector<const char*> cpus = {"", "haswell", "nehalem"};
  if (compiler::detect_target().features.find("+avx512bf16") != std::string::npos) cpus.push_back("znver4");
  return cpus;
}

TEST_CASE("jit matmul of bf16 operands: vdpbf16ps on Zen 4 and 5 (znver4 where the host has avx512_bf16), widened elsewhere") {
  // The pairs of k's of the vdpbf16ps path (gemm.h) around an odd k, the register
  // tile, a K block of pairs (2 KC) and gemm_rows' steps of 2W; every flag, so
  // every packing (pairs along k, pairs interleaved across rows) and A read in
  // place (even k) or packed (odd k). Products of bf16 values are exact in f32,
  // so the bound of f32's sums holds.
  const compiler::GemmBlocking g = host_blocking();
  const std::vector<std::array<int64_t, 3>> mkn = {
      {1, 1, 1},          {3, 2, 5},         {g.mr + 1, 3, g.nr + 1},  {g.mr - 1, 2 * g.kc + 1, g.nr - 1},
      {97, 33, 2 * g.nr + 3}, {g.mc + 1, 2 * g.kc - 1, 5}, {40, 2 * g.kc + 2, 70}, {4, 2 * g.w + 1, 17},
      {16, 64, 1000},     {5, 2 * g.w - 1, 3},  {2 * g.mr + 3, 2048, 37}};  // the last: rows 4 KiB apart
  Rng rng(45);
  INFO("host bf16 dot: " << compiler::detect_target().bf16_dot);
  for (const char* cpu : bf16_targets()) {
    INFO("target cpu " << (*cpu ? cpu : "host"));
    for (const auto& [m, k, n] : mkn)
      for (const auto& [ta, tb] : kFlags) check_random(rng, bf16_case(m, k, n, ta, tb), jit_for_cpu(cpu));
  }
}

TEST_CASE("jit matmul of f32 operands cast to bf16: the GEMM rounds them as it packs, on every target") {
  // The same shapes and packings as bf16 operands (above), with f32 inputs and
  // the casts in the graph: fusion copies each cast into the matmul's kernel
  // (the input is a declaration), so there is no cast kernel, except for a
  // product the few-rows GEMM takes, which reads B as stored. Rounding to
  // nearest even as the interpreter's cast does, the bound of f32's sums holds.
  const compiler::GemmBlocking g = host_blocking();
  const std::vector<std::array<int64_t, 3>> mkn = {{1, 1, 1},
                                                   {3, 2, 5},
                                                   {g.mr + 1, 3, g.nr + 1},
                                                   {g.mr - 1, 2 * g.kc + 1, g.nr - 1},
                                                   {97, 33, 2 * g.nr + 3},
                                                   {g.mc + 1, 2 * g.kc - 1, 5},
                                                   {40, 2 * g.kc + 2, 70},
                                                   {4, 2 * g.w + 1, 17},
                                                   {5, 2 * g.w - 1, 3},
                                                   {2 * g.mr + 3, 2048, 37}};
  Rng rng(46);
  for (const char* cpu : bf16_targets()) {
    INFO("target cpu " << (*cpu ? cpu : "host"));
    for (const auto& [m, k, n] : mkn)
      for (const auto& [ta, tb] : kFlags) {
        Case c = bf16_case(m, k, n, ta, tb);
        c.cast = true;
        const bool few_rows = !ta && tb && m <= compiler::kGemmRowsMaxM;
        size_t casts = 0;
        const compiler::CompiledGraph compiled = compiler::compile_graph(matmul_graph(c));
        for (const Node& node : compiled.graph.nodes()) casts += node.op() == "cast";
        CHECK(casts == (few_rows ? 2 : 0));
        check_random(rng, c, jit_for_cpu(cpu));
      }
  }
}

TEST_CASE("jit matmul on shapes around the cache blocks") {
  const compiler::GemmBlocking g = host_blocking();
  Rng rng(32);
  const std::vector<std::array<int64_t, 3>> mkn = {{g.mc + 1, g.kc + 1, 3},
                                                   {3, g.kc - 1, g.nc + 1},
                                                   {g.mc - 1, 2 * g.kc + 7, 33},
                                                   {g.mc + g.mr + 1, 5, g.nc - 1},
                                                   {300, 257, 129},
                                                   {2 * g.mr + 3, 1024, 37}};  // rows 4 KiB apart: A packed
  for (const auto& [m, k, n] : mkn)
    for (const auto& [ta, tb] : kFlags) check_random(rng, make_case(m, k, n, ta, tb));
}

TEST_CASE("jit matmul is exact on small integers with broadcast batch dims") {
  const compiler::GemmBlocking g = host_blocking();
  Rng rng(33);
  struct Batches {
    Shape a, b;
  };
  const std::vector<Batches> batches = {{{2, 1, 3}, {5, 1}}, {{4}, {}}, {{}, {3}}, {{1, 2}, {3, 1}}, {{2}, {1}}};
  for (const Batches& bd : batches)
    for (const auto& [ta, tb] : kFlags) {
      const Case c = make_case(g.mr + 2, 19, g.nr + 3, ta, tb, bd.a, bd.b);
      check_values(c, small_integers(rng, c.a), small_integers(rng, c.b), true);
    }
  // Deep enough for several K blocks, still exact: |sum| <= 9 * 600.
  const Case deep = make_case(20, 2 * g.kc + 88, 40, false, true, {2}, {2});
  check_values(deep, small_integers(rng, deep.a), small_integers(rng, deep.b), true);
}

TEST_CASE("jit batched matmul with broadcast batch dims on random values") {
  Rng rng(34);
  check_random(rng, make_case(7, 13, 21, false, false, {2, 1, 3}, {5, 1}));
  check_random(rng, make_case(17, 40, 9, true, false, {3}, {1}));
  check_random(rng, make_case(1, 1, 1, false, true, {4, 1}, {1, 6}));
  check_random(rng, make_case(33, 65, 33, true, true, {2, 2}, {}));
}

TEST_CASE("jit matmul propagates infinities and nan as the reference does") {
  Rng rng(36);
  const Case c = make_case(19, 41, 37, false, false);
  for (int trial = 0; trial < 3; ++trial) {
    Tensor a = random_tensor(rng, {DType::f32, c.a}, Values::moderate);
    Tensor b = random_tensor(rng, {DType::f32, c.b}, Values::moderate);
    const float specials[] = {INFINITY, -INFINITY, NAN};
    for (int i = 0; i < 6; ++i) {
      a.f32().data()[rng.uniform(0, a.numel() - 1)] = specials[rng.uniform(0, 2)];
      b.f32().data()[rng.uniform(0, b.numel() - 1)] = specials[rng.uniform(0, 2)];
    }
    b.f32().data()[0] = 0.0f;  // inf * 0 = nan somewhere
    check_values(c, a, b, false);
  }
}

// The task split follows the thread count at compile time (a balance hint) and
// the run splits tasks across the threads it has: neither may change a bit.
TEST_CASE("jit matmul results are bit-identical with 1 2 and 4 threads") {
  const compiler::GemmBlocking g = host_blocking();
  Rng rng(37);
  for (const Case& c : {make_case(2 * g.mc + 5, g.kc + 9, 2 * g.nc + 3, false, false),
                        make_case(g.mc + 1, 300, 70, true, true, {3}, {1}), make_case(100, 64, 100, false, true),
                        make_case(16, 130, 1000, false, true)}) {  // gemm_rows
    INFO(describe(c));
    const Tensor a = random_tensor(rng, {DType::f32, c.a}), b = random_tensor(rng, {DType::f32, c.b});
    std::vector<Tensor> results;
    for (int compile_threads : {1, 4}) {  // different splits for all three shapes
      kiln_set_num_threads(compile_threads);
      compiler::JitExecutable jit(matmul_graph(c));
      for (int threads : {1, 2, 4}) {
        kiln_set_num_threads(threads);
        results.push_back(run(jit, a, b));
      }
    }
    kiln_set_num_threads(0);
    for (size_t i = 1; i < results.size(); ++i) {
      INFO("run " << i);
      CHECK(compare_tensors(results[0], results[i], {0, 0}) == "");
    }
  }
}
