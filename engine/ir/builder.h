#pragma once
// The Builder adds nodes to a Graph, inferring result types as it goes and
// rejecting mistakes with an error naming the op and its operands' types.
// Per-op helpers (ops::add(b, x, y), ops::matmul(...)) live with the ops.
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/ir/op_def.h"

namespace kiln {

class Builder {
 public:
  explicit Builder(Graph& g) : g_(g) {}

  Graph& graph() { return g_; }
  const TensorType& type(Value v) const { return g_.type(v); }

  Value input(const std::string& name, TensorType t) { return g_.declare(ValueKind::input, name, std::move(t)); }
  Value param(const std::string& name, TensorType t, Attrs attrs = {}) {
    return g_.declare(ValueKind::param, name, std::move(t), std::move(attrs));
  }
  Value state(const std::string& name, TensorType t, Attrs attrs = {}) {
    return g_.declare(ValueKind::state, name, std::move(t), std::move(attrs));
  }
  void output(Value v) { g_.add_output(v); }

  // The location of every node this builder adds from now on (a pass gives a
  // rewrite's nodes the origin of what they replace; autodiff, a gradient's).
  const Location& location() const { return loc_; }
  void set_location(Location loc) { loc_ = std::move(loc); }

  // A model scope for the nodes added while it lives (PyTorch's module names, XLA's
  // name scope): Scope s(b, "encoder"), then Scope t(b, "0") inside it, makes them
  // "encoder.0"; inside a backward scope the new one is backward too. Throws
  // kiln::Error for a name that is not is_identifier.
  class Scope {
   public:
    Scope(Builder& b, std::string_view name);
    ~Scope() { b_.loc_ = std::move(saved_); }
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;

   private:
    Builder& b_;
    Location saved_;
  };

  // Adds `op(operands) {attrs}`; result names come from `names` (fresh if absent).
  // Throws kiln::Error: "matmul(f32[2,3], f32[4,5]): ..." on any mistake the
  // verifier would find (an assign to what is not a param or state, or to one
  // assigned already, included), adding nothing.
  std::vector<Value> emit(const std::string& op, const std::vector<Value>& operands, const Attrs& attrs = {},
                          const std::vector<std::string>& names = {});
  // Same, for an op with exactly one result.
  Value emit1(const std::string& op, const std::vector<Value>& operands, const Attrs& attrs = {},
              const std::string& name = {});
  // Adds `fusion(operands) {attrs}` with `body` (body_result_types checks it).
  std::vector<Value> emit_fusion(std::shared_ptr<const Graph> body, const std::vector<Value>& operands,
                                 const Attrs& attrs = {}, const std::vector<std::string>& names = {});

 private:
  void check_write_target(const std::string& op, const std::vector<TensorType>& operand_types, Value target) const;
  std::vector<Value> emit_node(const std::string& op, const std::vector<Value>& operands, const Attrs& attrs,
                               const std::vector<std::string>& names, std::shared_ptr<const Graph> body);

  Graph& g_;
  Location loc_;
};

// The result types of `def` on these operands (attributes already completed):
// checks the operand count, then runs the op's inference (for an op with a body,
// body_result_types) and checks that each result can exist (check_countable).
// Errors name the op and the operand types.
std::vector<TensorType> infer_result_types(const OpDef& def, const std::vector<TensorType>& operand_types,
                                           const Attrs& completed_attrs, const Graph* body = nullptr);

// A body's result types: its outputs' types, once its declarations are checked to
// be inputs typed like the operands, in order, with no assigns; the body of a
// horizontal fusion (`holds_parts`) holds loop fusions only, any other plain ops only.
std::vector<TensorType> body_result_types(const Graph& body, const std::vector<TensorType>& operand_types,
                                          bool holds_parts);

// "op(f32[2,3], i32[4])": how errors name a node's operands.
std::string op_signature(const std::string& op, const std::vector<TensorType>& operand_types);

}  // namespace kiln
