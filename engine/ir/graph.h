#pragma once
// The Graph IR: SSA values with static types, nodes that name an OpDef, and the
// graph's declarations (input / param / state) and outputs.
#include <compare>
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "engine/ir/attr.h"
#include "engine/ir/error.h"
#include "engine/ir/location.h"
#include "engine/ir/shape.h"

namespace kiln {

struct OpDef;
class Graph;

// A handle to one SSA value of a Graph.
struct Value {
  int32_t id = -1;
  bool valid() const { return id >= 0; }
  auto operator<=>(const Value&) const = default;
};

// input: fed on every run; param: persistent and trainable; state: persistent, not
// trainable (optimizer moments, step counter); result: produced by a node.
enum class ValueKind { input, param, state, result };
std::string_view value_kind_name(ValueKind k);

struct ValueInfo {
  std::string name;  // unique in the graph, without the '%'
  TensorType type;
  ValueKind kind = ValueKind::result;
  int32_t node = -1;  // producing node for results
  Attrs attrs;        // declaration attributes, e.g. a param's {init="ones"}
};

struct Node {
  const OpDef* def = nullptr;
  std::vector<Value> operands;
  Attrs attrs;
  std::vector<Value> results;
  // A `fusion` node's body (OpDef::has_body): a graph whose inputs take the
  // operands, in order, and whose outputs are the results. Null for other ops.
  std::shared_ptr<const Graph> body;
  Location loc;  // its model scopes and the .kir text that wrote it: kept through every pass
  const std::string& op() const;
};

// References handed out by value(), type(), name_of(), producer() and nodes()
// stay valid for the graph's lifetime: values and nodes are only ever appended, to
// deques, which never move their elements. A rename changes the name in place.
class Graph {
 public:
  // Names, like everything a graph holds, are what .kir can write and read back:
  // an invalid graph name (is_identifier) is a kiln::Error.
  explicit Graph(std::string name = "main");

  const std::string& name() const { return name_; }
  void set_name(std::string name);

  // Declares an input, param or state; throws kiln::Error if the name is taken or
  // invalid, or the type has a negative dim or more elements than int64 counts.
  Value declare(ValueKind kind, const std::string& name, TensorType type, Attrs attrs = {});
  // Appends a node without checking its op (the Builder and the parser check
  // first). An empty result name gets a fresh numeric name; an invalid or taken
  // one throws kiln::Error before anything is added.
  int32_t add_node(const OpDef* def, std::vector<Value> operands, Attrs attrs,
                   const std::vector<TensorType>& result_types, const std::vector<std::string>& result_names,
                   std::shared_ptr<const Graph> body = nullptr, Location loc = {});
  void add_output(Value v);
  // Adds `loc`'s scopes to node `node`'s (CSE keeping one node for several).
  void merge_location(int32_t node, const Location& loc);
  // Gives a value a new unique name; throws kiln::Error if it is taken or invalid.
  void rename(Value v, const std::string& name);

  const ValueInfo& value(Value v) const { return values_.at(static_cast<size_t>(v.id)); }
  const TensorType& type(Value v) const { return value(v).type; }
  const std::string& name_of(Value v) const { return value(v).name; }
  std::optional<Value> find(std::string_view name) const;
  size_t num_values() const { return values_.size(); }

  const std::deque<Node>& nodes() const { return nodes_; }
  const Node& producer(Value v) const { return nodes_.at(static_cast<size_t>(value(v).node)); }
  const std::vector<Value>& declarations() const { return decls_; }  // in declaration order
  std::vector<Value> declarations(ValueKind kind) const;
  const std::vector<Value>& outputs() const { return outputs_; }
  // Whether a side-effect node (an assign) already writes v: a set, so a graph
  // of 100,000 assigns checks each new one in constant time.
  bool is_written(Value v) const { return written_.count(v.id) > 0; }

  // `hint` if free, else `hint_1`, `hint_2`, ...; with no hint the next free number.
  std::string fresh_name(std::string_view hint = {}) const;

 private:
  // Throws kiln::Error unless `name` is a valid value name that no value has.
  void check_free_name(const std::string& name) const;
  Value add_value(ValueInfo info);

  std::string name_;
  std::deque<ValueInfo> values_;
  std::deque<Node> nodes_;
  std::vector<Value> decls_;
  std::vector<Value> outputs_;
  std::unordered_map<std::string, int32_t> by_name_;
  std::unordered_set<int32_t> written_;  // first operands of side-effect nodes
  mutable int64_t next_number_ = 0;
};

// Whether a and b compute the same thing the same way: the same declarations
// (kinds, types, attributes), the same nodes in order (ops, attributes, operands,
// result types, bodies alike), the same outputs; names aside. Linear in the
// graphs: codegen compiles one function for the alike parts of a horizontal
// fusion.
bool same_computation(const Graph& a, const Graph& b);

// How reports name a node: "%h (matmul in enc.0.ffn)", its first result, op and
// scopes (or .kir position); "%h (matmul)" when it has neither.
std::string node_label(const Graph& g, const Node& n);

// "i0", "t12": a prefix and a number (canonical and generated value names).
std::string numbered(const char* prefix, size_t n);

// Whether `s` is a valid value or graph name: [A-Za-z0-9_.]+
bool is_identifier(std::string_view s);
// Throws kiln::Error "invalid WHAT name 'S' (...)" unless is_identifier(s).
void check_identifier(std::string_view s, std::string_view what);

}  // namespace kiln
