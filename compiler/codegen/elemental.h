#pragma once
// Elemental generators (XLA's idea): an op that computes each result element from
// operand elements at related indices is described by a function from an output
// index to the result elements there, written against *operand generators* rather
// than memory. An unfused node's operand generators load from the operands'
// buffers (buffer_generator); a fusion kernel passes the producer's generator
// instead, so intermediates never reach memory. The same generator serves a whole
// vector of W lanes or a single element.
//
// Adding an elemental op: write an ElementalFn and register it with
// EmitterRegistry::add_elemental (emitter_registry.h) from your family's file.
// The function maps the index it is given to operand indices (broadcast_index,
// or its own mapping), calls operand generators, and combines their values with
// the builder. When a case cannot be vectorized (the lanes would not advance
// along one operand axis), wrap the scalar computation in per_lane().
#include <functional>
#include <llvm/IR/Value.h>
#include <vector>

#include "compiler/codegen/lowering_context.h"
#include "compiler/codegen/node_ref.h"

namespace kiln::compiler {

// An index into a tensor, asking for `width` elements at once (any width from 1 to
// the target's vector width). dims has one i64
// per axis of the tensor. With width > 1 and lane_axis >= 0, lane l is the
// element at dims with dims[lane_axis] + l (all in range); with lane_axis == -1
// every lane is the element at dims (a broadcast: return a splat).
struct ElementIndex {
  std::vector<llvm::Value*> dims;
  int width = 1;
  int lane_axis = -1;
};

// Returns the elements at an index: a scalar of the tensor's register type when
// index.width == 1, else a <width x T> vector (lowering_context.h: f32 float,
// i32 i32, bool i1). Emits code at the builder's position, in the function being
// emitted; it may create blocks but leaves the builder in the continuing block.
using Generator = std::function<llvm::Value*(const ElementIndex&)>;

struct ElementalArgs {
  LoweringContext& cx;
  NodeRef node;                            // attributes, operand and result types
  const std::vector<Generator>& operands;  // one per operand, indexed in operand space
};

// The result elements of args.node at `index` (an index into the result).
using ElementalFn = std::function<llvm::Value*(const ElementalArgs& args, const ElementIndex& index)>;

// Loads from the buffer of graph value v (of type t): a vector load when the lanes
// run along the innermost axis, a scalar load and splat for broadcast lanes,
// per-lane scalar loads otherwise.
Generator buffer_generator(LoweringContext& cx, Value v, const TensorType& t);

// The operand index for a result index under numpy broadcasting: operand axes align
// with the result's trailing axes; size-1 operand axes read index 0. The lanes
// become a broadcast (lane_axis -1) if their axis is size 1 or absent in the operand.
ElementIndex broadcast_index(LoweringContext& cx, const ElementIndex& index, const Shape& result,
                             const Shape& operand);

// The row-major flat offset of index.dims in `shape` (i64).
llvm::Value* flat_offset(LoweringContext& cx, const std::vector<llvm::Value*>& dims, const Shape& shape);

// The row-major multi-index of flat offset `flat` (i64) in `shape`.
std::vector<llvm::Value*> unflatten(LoweringContext& cx, llvm::Value* flat, const Shape& shape);

// The generic fallback for cases a generator cannot vectorize: calls `scalar` once
// per lane with a width-1 index and assembles the vector (once and a splat for
// broadcast lanes). Returns scalar(index) directly when index.width == 1.
llvm::Value* per_lane(LoweringContext& cx, const ElementIndex& index,
                      const std::function<llvm::Value*(const ElementIndex&)>& scalar);

// One tensor a loop writes: the kernel value whose buffer it fills, its dtype,
// and the generator of its elements.
struct LoopOutput {
  Value value;
  DType dtype;
  Generator gen;
};

// Writes every element of the tensors `outputs`, all of shape `shape`, from their
// generators: the outer axes flattened into rows split across threads, the
// innermost axis in steps of the vector width W plus one narrower step for the
// remainder (so generators see widths W and 1..W-1). At each index every output's
// value is computed before any is stored, so an output may share memory with an
// operand read at that same index only (in place), and LLVM can share the work
// common to several outputs. Emitted at the builder's position.
void emit_elemental_loop(LoweringContext& cx, const std::string& name, const Shape& shape,
                         const std::vector<LoopOutput>& outputs);

}  // namespace kiln::compiler
