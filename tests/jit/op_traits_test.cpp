// Each op's lowering facts (OpDef::lowering, takes_epilogue) against its
// emitter. Fusion and the schedule trust the OpDef, so an emitter that does
// not do what it says would miscompile without an error: an op said to be
// elemental whose emitter is a kernel would be fused into loops it cannot be
// composed into. EmitterRegistry refuses such an emitter as it is added, and
// OpRegistry an OpDef whose traits contradict its lowering.
#include <doctest/doctest.h>

#include "compiler/codegen/emitter_registry.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

using namespace kiln;
using namespace kiln::compiler;

TEST_CASE("an emitter that disagrees with its op's lowering facts is refused, naming both") {
  EmitterRegistry r;
  const ElementalFn elemental = [](const ElementalArgs&, const ElementIndex&) -> llvm::Value* { return nullptr; };
  const KernelFn kernel = [](const KernelEmitArgs&) {};
  CHECK_THROWS_WITH_AS(r.add_elemental("matmul", elemental),
                       "codegen: an elemental emitter for op 'matmul' (lowering elemental) disagrees with its OpDef "
                       "(lowering reads_memory, takes an epilogue): fusion and the schedule trust the OpDef, so the "
                       "emitter must do what it says",
                       Error);
  CHECK_THROWS_WITH_AS(r.add_kernel("softmax", kernel, KernelReads::memory),
                       doctest::Contains("a kernel emitter reading memory for op 'softmax' (lowering reads_memory) "
                                         "disagrees with its OpDef (lowering fuses_producers)"),
                       Error);
  CHECK_THROWS_WITH_AS(r.add_kernel("matmul", kernel, KernelReads::memory),
                       doctest::Contains("(lowering reads_memory) disagrees with its OpDef (lowering reads_memory, "
                                         "takes an epilogue)"),
                       Error);
  CHECK_THROWS_WITH_AS(r.add_kernel("exp", kernel, KernelReads::generators),
                       doctest::Contains("disagrees with its OpDef (lowering elemental)"), Error);
  CHECK_THROWS_WITH_AS(r.add_elemental("no_such_op", elemental),
                       "codegen: an elemental emitter for op 'no_such_op', which the op catalogue does not have", Error);
  CHECK(r.find("matmul") == nullptr);  // nothing refused was added
  r.add_kernel("matmul", kernel, KernelReads::memory, /*takes_epilogue=*/true);
  r.add_elemental("exp", elemental);
  CHECK(r.find("matmul") != nullptr);
}

TEST_CASE("an op whose traits contradict its lowering is refused") {
  OpRegistry ops;
  CHECK_THROWS_WITH_AS(ops.add(OpDef{.name = "test_elementwise_kernel", .min_operands = 1, .max_operands = 1,
                                     .elementwise = true, .lowering = Lowering::fuses_producers}),
                       "op 'test_elementwise_kernel': an elementwise, element-moving or constant op is elemental, "
                       "not lowering fuses_producers",
                       Error);
  CHECK_THROWS_WITH_AS(ops.add(OpDef{.name = "test_reduction", .min_operands = 1, .max_operands = 1,
                                     .reduction = true, .lowering = Lowering::reads_memory}),
                       doctest::Contains("a reduction reads its operand through generators"), Error);
  CHECK_THROWS_WITH_AS(ops.add(OpDef{.name = "test_epilogue", .lowering = Lowering::fuses_producers,
                                     .takes_epilogue = true}),
                       doctest::Contains("a kernel taking an epilogue reads its operands from memory"), Error);
  CHECK(ops.find("test_reduction") == nullptr);
}

TEST_CASE("every op of the catalogue that the JIT lowers has an emitter of its lowering") {
  register_all_emitters();  // refuses any that disagrees
  for (const OpDef* d : OpRegistry::global().all()) {
    CAPTURE(d->name);
    const OpEmitter* e = EmitterRegistry::global().find(d->name);
    // The op table requires an emitter of every catalogue op; a test may add ops of its own.
    if (d->lowering == Lowering::none) CHECK(e == nullptr);
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
  CHECK(def("matmul")->takes_epilogue);
  CHECK(def("matmul")->lowering == Lowering::reads_memory);
  CHECK(def("softmax")->lowering == Lowering::fuses_producers);
  CHECK(def("concat")->lowering == Lowering::elemental);
  CHECK(def("fusion")->lowering == Lowering::none);
}
