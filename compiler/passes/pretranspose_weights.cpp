// pretranspose-weights (ONNX Runtime's pre-packing of constant weights, done
// as a rewrite): a product of few rows by a weight stored k x n,
//   matmul(a, w)  ->  matmul(a, transpose(w)) {transpose_b}
// where w is a param the graph never assigns. The transpose depends on the
// params alone, so the program runs it once per binding of them (run-invariant
// calls, schedule/program.h), and the product takes the few-rows GEMM, which
// reads the n x k weight in place, where the packed GEMM packed w into panels
// at every call (a decoder step's products: 16 to 32 rows by each weight). The
// price is a second copy of each weight so rewritten, held by the executable.
//
// It runs after transpose-folding, which would fold the transpose back into
// the flag. One transpose serves every product by the same weight.
#include <map>
#include <ostream>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "compiler/gemm_shapes.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {
namespace {

// The param whose elements `w` holds, read through ops that only move elements
// (reshape, slice, ...); an invalid Value when w comes from anything else.
Value source_param(const Graph& g, Value w) {
  while (g.value(w).kind == ValueKind::result) {
    const Node& n = g.producer(w);
    if (!n.def->moves_elements) return {};
    w = n.operands[0];
  }
  return g.value(w).kind == ValueKind::param ? w : Value{};
}

// The product of op(a)'s dims other than the contracted one: the rows the GEMM
// multiplies by each weight (a's batch dims times its rows).
int64_t rows_of(const Shape& a) {
  int64_t rows = 1;
  for (size_t d = 0; d + 1 < a.size(); ++d) rows *= a[d];
  return rows;
}

// Swaps the last two axes.
std::vector<int64_t> last_two_swapped(size_t rank) {
  std::vector<int64_t> perm;
  for (size_t d = 0; d < rank; ++d) perm.push_back(static_cast<int64_t>(d));
  std::swap(perm[rank - 2], perm[rank - 1]);
  return perm;
}

}  // namespace

Graph pretranspose_weights(const Graph& g, std::ostream* remarks) {
  std::set<int> assigned;  // value ids of assign targets
  for (const Node& n : g.nodes())
    if (n.def->side_effect) assigned.insert(n.operands[0].id);
  GraphRewriter rw(g);
  std::map<int, Value> transposed;  // by source value id of a weight: its transpose in the new graph
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    const Value param = n.op() == "matmul" ? source_param(g, n.operands[1]) : Value{};
    // A product by anything but a param's elements, or whose weight already
    // is n x k, has nothing to gain.
    if (!param.valid() || n.attrs.get_bool("transpose_b")) {
      rw.copy(i);
      continue;
    }
    const Value a = n.operands[0], w = n.operands[1];
    const std::string product = "pretranspose-weights: %" + g.name_of(n.results[0]);
    const std::string stays = product + " (%" + g.name_of(a) + " times %" + g.name_of(w) + ") stays as written: ";
    const int64_t rows = rows_of(g.type(a).shape);
    std::string why;
    if (assigned.count(param.id))
      why = "%" + g.name_of(param) + " is assigned by the graph, so a transpose of it would run at every step";
    else if (n.attrs.get_bool("transpose_a"))
      why = "%" + g.name_of(a) + " is read transposed (transpose_a); the few-rows GEMM reads it row by row";
    else if (rows > kGemmRowsMaxM)
      why = std::to_string(rows) + " rows, more than the few-rows GEMM's " + std::to_string(kGemmRowsMaxM) +
            " (the packed GEMM reuses each packed panel across them)";
    if (!why.empty()) {
      if (remarks) *remarks << stays << why << "\n";
      rw.copy(i);
      continue;
    }
    auto [at, fresh] = transposed.emplace(w.id, Value{});
    if (fresh)
      at->second = rw.emit(i, "transpose", {rw.map(w)}, {{"perm", last_two_swapped(g.type(w).shape.size())}},
                           g.name_of(w) + ".t");
    Attrs attrs = n.attrs;
    attrs.set("transpose_b", true);
    rw.replace(n.results[0], rw.emit(i, "matmul", {rw.map(a), at->second}, attrs, g.name_of(n.results[0])));
    if (remarks)
      *remarks << product << " = matmul(%" << g.name_of(a) << ", %" << rw.target().name_of(at->second)
               << ") {transpose_b}: " << rows << " rows by %" << g.name_of(w)
               << " read in place by the few-rows GEMM, transposed once per binding of %" << g.name_of(param) << "\n";
  }
  return rw.finish();
}

}  // namespace kiln::compiler
