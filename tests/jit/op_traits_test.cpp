// Each op's traits (OpDef) against its emitter. Constant folding, fusion,
// memory planning and codegen trust the traits, so a trait its emitter does
// not honour would miscompile without an error: an op marked elementwise whose
// emitter is a kernel would be fused into loops it cannot be composed into.
#include <doctest/doctest.h>

#include "compiler/codegen/emitter_registry.h"
#include "engine/ir/op_def.h"

using namespace kiln;
using namespace kiln::compiler;

TEST_CASE("every op's traits agree with its emitter") {
  register_all_emitters();
  for (const OpDef* d : OpRegistry::global().all()) {
    CAPTURE(d->name);
    const bool any_trait = d->elementwise || d->moves_elements || d->constant || d->random || d->reduction;
    // Not lowered by an emitter: a fusion's body is, an assign and a
    // collective are calls of the program.
    if (d->has_body || d->side_effect || d->collective) {
      CHECK(EmitterRegistry::global().find(d->name) == nullptr);
      CHECK_FALSE(any_trait);
      continue;
    }
    const OpEmitter* e = EmitterRegistry::global().find(d->name);
    // An op with no emitter is refused by the JIT as a whole ("jit: no lowering
    // for op"; the op table requires one of every catalogue op), and a test may
    // register one of its own.
    if (!e) continue;
    CHECK((e->elemental != nullptr) != (e->kernel != nullptr));
    // What fusion composes into loops has elemental code.
    if (d->elementwise || d->moves_elements || d->constant) CHECK(e->elemental != nullptr);
    // A reduction is a kernel that reads its operand through generators: row
    // fusion computes the reduced rows from its producers.
    if (d->reduction) {
      CHECK(e->kernel != nullptr);
      CHECK(e->fuses_producers);
    }
    if (d->constant) {
      CHECK(d->max_operands == 0);
      CHECK_FALSE(d->elementwise);
    }
    if (d->moves_elements) CHECK(d->min_operands >= 1);
    // A kernel that takes an epilogue reads its operands from memory.
    if (e->epilogue) CHECK_FALSE(e->fuses_producers);
  }
}

TEST_CASE("the traits the passes read are where they say") {
  const auto def = [](const char* name) {
    const OpDef* d = OpRegistry::global().find(name);
    REQUIRE(d != nullptr);
    return d;
  };
  CHECK(def("add")->elementwise);
  CHECK(def("cast")->elementwise);
  CHECK(def("dropout")->elementwise);
  CHECK(def("dropout")->random);
  CHECK(def("identity")->moves_elements);
  CHECK(def("transpose")->moves_elements);
  CHECK_FALSE(def("transpose")->elementwise);  // reads its operand at other indices
  CHECK_FALSE(def("concat")->moves_elements);  // several operands: not one splat
  CHECK(def("iota")->constant);
  CHECK(def("max")->reduction);
  CHECK_FALSE(def("softmax")->reduction);  // a row op, not a reduction: its result keeps the shape
  // Only an integer division can fail.
  const TensorType f32{DType::f32, {2}}, i32{DType::i32, {2}};
  CHECK_FALSE(def("div")->may_fail({f32, f32}));
  CHECK(def("div")->may_fail({i32, i32}));
  CHECK(def("gather")->may_fail({f32, i32}));
  CHECK(def("add")->may_fail == nullptr);
}
