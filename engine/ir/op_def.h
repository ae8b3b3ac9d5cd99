#pragma once
// OpDef: everything the system knows about one op (schema, shape/dtype inference,
// reference kernel, gradient rule). Ops live in ops/ and register themselves in
// the OpRegistry at start-up (ops/register_all.h: register_all_ops()).
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/attr.h"
#include "engine/ir/graph.h"
#include "engine/ir/shape.h"

namespace kiln {

class Tensor;
class Builder;

struct AttrSpec {
  std::string name;
  AttrKind kind;
  std::optional<Attr> default_value{};  // none: the attribute is required
};

// Result types from operand types and (defaults-filled) attributes. Throws
// kiln::Error with a message about the problem; the Builder adds the op name and
// the operand types.
using InferFn = std::function<std::vector<TensorType>(const std::vector<TensorType>& operands, const Attrs& attrs)>;

// The reference kernel's view of one node: operand tensors, result tensors
// pre-allocated with the inferred types (a kernel may replace them with tensors of
// the same type), and the node's attributes.
struct KernelArgs {
  const std::vector<const Tensor*>& in;
  const std::vector<Tensor*>& out;
  const Attrs& attrs;
};
using ReferenceFn = std::function<void(const KernelArgs&)>;

// Gradient rule: given the node and the gradient of each result (an invalid Value
// where a result has none), emits gradient nodes with the Builder and returns one
// Value per operand (invalid where the operand gets no gradient).
using GradientFn =
    std::function<std::vector<Value>(Builder& b, const Node& node, const std::vector<Value>& result_grads)>;

// How the JIT computes an op (OpDef::lowering): how its kernel reads its
// operands, which is what fusion and the schedule need to know of it.
enum class Lowering {
  none,             // no emitter: a fusion's body is compiled instead; an assign and a collective are
                    // calls of the program
  elemental,        // an element at a time from operand elements (an elemental generator): composed into
                    // loops and into the kernels that fuse producers
  fuses_producers,  // a kernel op reading its operands through generators: its elemental producers fuse into it
  reads_memory,     // a kernel op reading its operands from memory (packing, tiles): they are stored first
};
std::string_view lowering_name(Lowering lowering);  // "none", "elemental", "fuses_producers", "reads_memory"

// Built with designated initializers (OpDef{.name = "exp", ...}); every field has a
// default, so one left out is empty without a -Wmissing-field-initializers warning.
struct OpDef {
  std::string name{};
  std::string summary{};  // one line, for `kiln ops` and docs
  int min_operands = 0;
  int max_operands = 0;  // -1: variadic
  std::vector<AttrSpec> attrs{};
  InferFn infer{};
  ReferenceFn reference{};
  GradientFn gradient{};     // empty: not differentiable (issue: autodiff)
  bool side_effect = false;  // assign: writes operand 0 (a param or state) when the step ends
  // allreduce: talks to the other ranks of a data-parallel job, so every rank
  // must run it in the same order: never folded at compile time, never fused
  // into a kernel; the program starts it and waits for it as calls of their own.
  bool collective = false;
  bool has_body = false;     // fusion: the node carries a body graph that defines its results

  // Traits: what the passes may assume about the op. Constant folding, fusion,
  // memory planning and codegen read them (no pass keeps a list of op names);
  // OpRegistry::add refuses traits that contradict the op's lowering.
  //
  // Each result element comes from the operands' elements at its own
  // (broadcast) index only: splat operands give a splat, a producer is computed
  // where its consumer reads it, and the result may overwrite an operand of its
  // shape in place.
  bool elementwise = false;
  // The result's elements are operand 0's, moved (reshape, transpose, broadcast,
  // slice, identity): a splat stays the same splat.
  bool moves_elements = false;
  // No operands, and cheap anywhere (fill, iota, causal_mask): folded as a
  // constant, and recomputed in each consumer rather than stored.
  bool constant = false;
  // Draws random numbers (dropout): never folded.
  bool random = false;
  // Reduces operand 0 over the dims of its "axes" attribute, kept as size 1
  // with "keepdims" (sum, mean, max).
  bool reduction = false;
  // The result is operand 0 with some elements replaced (update_slice): it may
  // take operand 0's memory, and the kernel then writes only those elements.
  bool overwrites_operand0 = false;
  // Whether the op's code checks its operands at run time, for these operand
  // types (an i32 division by zero, a gather index out of range). Such an op
  // is a kernel of its own that computes, so checks, every element, as the
  // interpreter does; fused, it would compute only the elements read.
  // Empty: never.
  std::function<bool(const std::vector<TensorType>& operands)> may_fail{};

  // Lowering facts: how the JIT computes the op, which fusion and the schedule
  // read (they never ask codegen). compiler/codegen/'s emitter for the op must
  // agree: EmitterRegistry refuses, at registration, one that does not.
  Lowering lowering = Lowering::none;
  // A kernel op of one result that applies an epilogue (matmul): fusion lets it
  // absorb its elementwise consumers, applied to each block of its result.
  bool takes_epilogue = false;

  bool elemental() const { return lowering == Lowering::elemental; }
  bool kernel_op() const { return lowering == Lowering::fuses_producers || lowering == Lowering::reads_memory; }
};

// Whether `node` checks its operands at run time (OpDef::may_fail).
bool may_fail(const Graph& g, const Node& node);

class OpRegistry {
 public:
  static OpRegistry& global();
  // Adds an op; throws kiln::Error if the name is taken or its traits
  // contradict its lowering (an elementwise op that is not elemental, ...).
  void add(OpDef def);
  const OpDef* find(const std::string& name) const;
  std::vector<const OpDef*> all() const;  // sorted by name

 private:
  std::map<std::string, std::unique_ptr<OpDef>> ops_;
};

// Checks attributes against the op's schema (unknown names, wrong kinds, missing
// required ones) and returns them with defaults filled in. Throws kiln::Error.
Attrs complete_attrs(const OpDef& def, const Attrs& given);

}  // namespace kiln
