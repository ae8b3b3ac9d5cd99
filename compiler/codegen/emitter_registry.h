#pragma once
// The table of LLVM emitters, keyed by op name. Each op family has one file in
// compiler/codegen/ with a `register_<family>_emitters(EmitterRegistry&)` function
// (declared in codegen/families.h, called from register_all_emitters()) that adds
// one entry per op, of one of two kinds, which must be what the op's OpDef says
// of its lowering (OpDef::lowering, takes_epilogue: fusion and the schedule read
// those, never this table); an entry that disagrees is refused as it is added:
//
//  * elemental (elemental.h): the op computes each result element from operand
//    elements; the driver wraps it in a vectorized, parallel loop over the result.
//  * kernel: the op needs its own loop structure (reductions, normalizations,
//    matmul, losses). Its KernelFn emits the whole computation of one node at the
//    builder's position, inside a function `void kernel(ptr buffers)`, reading
//    operands through args.operands (generators: element loads from the operands'
//    buffers, through which a producer's elemental code can be composed in) or
//    args.operand_ptr(i) (raw memory, e.g. for GEMM packing) and writing
//    args.result_ptr(i). Use cx.parallel_for to split outer loops across threads;
//    operand/result pointers and generators work inside its outlined body.
//    reduction_emitters.cpp is the model to follow.
//
// Adding an op family's emitters:
//   1. compiler/codegen/<family>_emitters.cpp defines
//      `void register_<family>_emitters(EmitterRegistry& r)` with r.add_elemental
//      or r.add_kernel per op, as the op's OpDef::lowering says (add_* refuse
//      an emitter that disagrees, naming the op and both);
//   2. declare it in compiler/codegen/families.h and call it in
//      register_all_emitters() (emitter_registry.cpp);
//   3. the op's row in tests/op_table/ then compiles it against the interpreter
//      (alone and fused, every target and thread count it samples).
// A graph using an op with no entry fails to compile with "jit: no lowering for
// op 'NAME'", never at run time.
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "compiler/codegen/elemental.h"

namespace kiln::compiler {

// A loop fused after a kernel op (a matmul's bias, activation, residual; an
// optimizer's update of the param whose gradient it makes): the kernel writes
// its result into `product`'s buffer and, once a block of it is final and still
// in cache, stores each output's value(index) at that index of the output. The
// values read the product back at their own index only. `product` is the one
// output (its elements are replaced in place) or, when the kernel stores its
// result, the result itself.
struct Epilogue {
  struct Output {
    Value value;
    DType dtype;
    Generator generator;
  };
  Value product;
  std::vector<Output> outputs;
  // If valid, the output that receives the sums of the rows of the kernel
  // op's operand B (a bias gradient beside its weight's), computed as B is packed.
  Value column_sums_of_b;
};

struct KernelEmitArgs {
  LoweringContext& cx;
  NodeRef node;
  const std::vector<Generator>& operands;  // element access, indexed in operand space
  const Epilogue* epilogue = nullptr;      // only for emitters registered as taking one

  // Data pointers of operand i / result i in the function being emitted.
  llvm::Value* operand_ptr(size_t i) const { return cx.buffer(node.node.operands[i]); }
  llvm::Value* result_ptr(size_t i = 0) const { return cx.buffer(epilogue ? epilogue->product : node.node.results[i]); }
};
using KernelFn = std::function<void(const KernelEmitArgs& args)>;

// How a kernel op's emitter reads its operands: what its OpDef::lowering must say.
enum class KernelReads {
  generators,  // only through KernelEmitArgs::operands (Lowering::fuses_producers)
  memory,      // through operand_ptr (packing, tiles) (Lowering::reads_memory)
};

// One op's entry: exactly one of the two functions is set. What the op is and
// how it lowers is in its OpDef.
struct OpEmitter {
  ElementalFn elemental;
  KernelFn kernel;
};

class EmitterRegistry {
 public:
  // The registry used by the lowering driver, filled by register_all_emitters().
  static EmitterRegistry& global();

  // Throw kiln::Error if the op already has an emitter, is not in the op
  // catalogue (OpRegistry::global()), or its OpDef's lowering says otherwise
  // (an elemental emitter for a kernel op, a kernel reading memory for an op
  // that fuses producers, an epilogue taken or not as OpDef::takes_epilogue says).
  void add_elemental(const std::string& op, ElementalFn fn);
  void add_kernel(const std::string& op, KernelFn fn, KernelReads reads, bool takes_epilogue = false);

  const OpEmitter* find(const std::string& op) const;  // nullptr: no lowering yet
  std::vector<std::string> ops() const;                 // sorted

 private:
  std::map<std::string, OpEmitter> emitters_;
};

// Registers every family's emitters in EmitterRegistry::global() (once; safe to
// call repeatedly and from several threads).
void register_all_emitters();

}  // namespace kiln::compiler
