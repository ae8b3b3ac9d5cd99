// transpose-folding (XLA's transpose_folding.cc): a matmul operand made by a
// transpose that swaps the last two axes is read through the matmul's
// transpose_a / transpose_b flag instead (the GEMM's packing reads either
// layout), so no kernel copies it. A transpose nothing else reads is left for
// dce, which runs next in the default pipeline.
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {
namespace {

// The transpose `perm` swaps the last two axes and keeps the others.
bool swaps_last_two(const std::vector<int64_t>& perm) {
  const size_t r = perm.size();
  if (r < 2) return false;
  for (size_t i = 0; i + 2 < r; ++i)
    if (perm[i] != static_cast<int64_t>(i)) return false;
  return perm[r - 2] == static_cast<int64_t>(r - 1) && perm[r - 1] == static_cast<int64_t>(r - 2);
}

}  // namespace

Graph fold_transposes(const Graph& g) {
  GraphRewriter rw(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (n.op() != "matmul") {
      rw.copy(i);
      continue;
    }
    std::vector<Value> operands;
    Attrs attrs = n.attrs;
    bool folded = false;
    const char* flags[] = {"transpose_a", "transpose_b"};
    for (size_t k = 0; k < 2; ++k) {
      const Value v = n.operands[k];
      if (g.value(v).kind == ValueKind::result && g.producer(v).op() == "transpose" &&
          swaps_last_two(g.producer(v).attrs.get_ints("perm"))) {
        operands.push_back(rw.map(g.producer(v).operands[0]));
        attrs.set(flags[k], !n.attrs.get_bool(flags[k]));
        folded = true;
      } else {
        operands.push_back(rw.map(v));
      }
    }
    if (folded)
      rw.replace(n.results[0], rw.emit(i, "matmul", operands, attrs, g.name_of(n.results[0])));
    else
      rw.copy(i);
  }
  return rw.finish();
}

}  // namespace kiln::compiler
