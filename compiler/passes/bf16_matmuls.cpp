// bf16-matmuls (--precision bf16): every f32 matmul takes its operands in bf16,
// as CPU autocast does, with f32 products, sums and result. The casts are new
// elementwise nodes, so fusion puts each into the loop of the value it rounds
// (a layer norm's output, a ReLU) and memory planning keeps the bf16 copy, at
// half the bytes, where a backward matmul reads it again; a param's cast is
// copied into each matmul kernel that reads it, whose GEMM rounds the param as
// it packs it (no bf16 copy of the weights at all). One cast
// per value, however many products read it: a layer's input feeds its forward
// projections and its weight gradient's product through the same copy; a ReLU's
// output, its gradient's mask too, so only the copy lives until the backward.
#include <ostream>

#include "compiler/passes/bf16_copies.h"
#include "compiler/passes/constants.h"
#include "compiler/passes/passes.h"
#include "compiler/passes/rewriter.h"

namespace kiln::compiler {

namespace {

bool is_sign_test(const Node& n) {
  return n.op() == "greater" || n.op() == "greater_equal" || n.op() == "less" || n.op() == "less_equal";
}

}  // namespace

Graph bf16_matmuls(const Graph& g, std::ostream* remarks) {
  GraphRewriter rw(g);
  Bf16Copies rounded(rw);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    std::vector<Value> operands = rw.mapped_operands(n);
    // A sign test against 0 (ReLU's gradient mask) of a value with a bf16 copy
    // reads the copy: rounding keeps the sign, so the test differs only for
    // |x| < 2^-134, and the f32 value need not live until the backward pass.
    if (is_sign_test(n) && splat_value(g, n.operands[1]) == 0.0 && rounded.has(operands[0])) {
      const Value wide = rounded.widened(i, operands[0], g.name_of(n.operands[0]));
      rw.replace(n.results[0], rw.emit(i, n.op(), {wide, operands[1]}, n.attrs, g.name_of(n.results[0])));
      if (remarks)
        *remarks << "bf16-matmuls: %" << g.name_of(n.results[0]) << " = " << n.op() << "(%"
                 << g.name_of(n.operands[0]) << ", 0) reads %" << g.name_of(n.operands[0]) << "'s bf16 copy\n";
      continue;
    }
    if (n.op() != "matmul" || rw.target().type(operands[0]).dtype != DType::f32) {
      rw.copy(i);
      continue;
    }
    std::vector<Value> halves;
    for (Value v : operands) halves.push_back(rounded.of(i, v));
    rw.replace(n.results[0], rw.emit(i, "matmul", halves, n.attrs, g.name_of(n.results[0])));
    if (remarks)
      *remarks << "bf16-matmuls: %" << g.name_of(n.results[0]) << " = matmul(%" << g.name_of(n.operands[0]) << ", %"
               << g.name_of(n.operands[1]) << "): operands in bf16, f32 sums\n";
  }
  return rw.finish();
}

}  // namespace kiln::compiler
