// fusion: a kernel made of several ops, written by the compiler's fusion pass
// (compiler/passes/). Its body is a graph of plain ops whose inputs take the
// operands and whose outputs are the results; the interpreter runs the body, the
// JIT compiles it into one kernel. `kind` says how the kernel is structured and
// the other attributes what it is built around (engine/ir/fusion_kind.h: loop,
// input, row, epilogue, horizontal; hero, reductions, column_sum,
// stores_product), which the verifier checks against the body (verify_fusion).
#include "engine/ir/error.h"
#include "ops/families.h"

namespace kiln::ops {

void register_fusion(OpRegistry& r) {
  OpDef d;
  d.name = "fusion";
  d.summary = "one kernel of several ops: results from a body graph over the operands";
  d.min_operands = 0;
  d.max_operands = -1;
  d.attrs = {{"kind", AttrKind::string, Attr{std::string("loop")}},
             {"hero", AttrKind::integer, Attr{int64_t{-1}}},
             {"reductions", AttrKind::ints, Attr{std::vector<int64_t>{}}},
             {"column_sum", AttrKind::integer, Attr{int64_t{-1}}},
             {"stores_product", AttrKind::boolean, Attr{false}}};
  d.infer = [](const std::vector<TensorType>&, const Attrs&) -> std::vector<TensorType> {
    throw Error("the result types come from the body");
  };
  d.has_body = true;
  r.add(std::move(d));
}

}  // namespace kiln::ops
