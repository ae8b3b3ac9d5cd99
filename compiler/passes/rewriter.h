#pragma once
// The scaffolding every pass shares. A Graph is append-only, so a pass builds a new
// graph: the declarations are copied first (same names, kinds, types and attributes,
// in order), then the pass visits the source nodes in order and either copies each
// one (operands remapped) or maps its results to other values of the new graph.
// finish() adds the outputs under their source names (pass_manager.h's invariants).
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/graph.h"

namespace kiln::compiler {

// A body cut out of `g` for a fusion node: the nodes `nodes` (indices into g's
// nodes, increasing), an input for each value they read that none of them makes
// (in order of first use, named p0, p1, ...), and `outputs` (values those nodes
// make; one may repeat) as its outputs. Each result keeps its name in g (made
// unique in the body). The one place a subgraph is cloned into a body.
struct ExtractedBody {
  std::shared_ptr<Graph> graph;
  std::vector<Value> inputs;  // for each input of the body, the value of g it stands for
};
ExtractedBody extract_body(const Graph& g, const std::vector<size_t>& nodes, const std::vector<Value>& outputs,
                           const std::string& name);

class GraphRewriter {
 public:
  explicit GraphRewriter(const Graph& source);

  const Graph& source() const { return src_; }
  const Graph& target() const { return dst_; }

  // The new graph's value for a source value (valid once its node has been visited).
  Value map(Value source_value) const;
  // Whether a source value has a value in the new graph yet.
  bool mapped(Value source_value) const { return map_.at(static_cast<size_t>(source_value.id)).valid(); }
  // The new graph's values for a source node's operands.
  std::vector<Value> mapped_operands(const Node& n) const;

  // Copies source node `index` with remapped operands; its results keep their names.
  void copy(size_t index);
  // Makes the source value `from` stand for `to`, a value of the new graph.
  void replace(Value from, Value to);
  // Adds `loc`'s scopes to the node of the new graph that makes `target_value`
  // (a node standing for several: CSE).
  void merge_location(Value target_value, const Location& loc);
  // The same with the locations of every source node that `source_output`
  // depends on short of `source_inputs`: a rewrite that replaces a whole chain
  // (softmax(q k^T) v by flash_attention) keeps the origins of all of it.
  void inherit_locations(Value target_value, Value source_output, const std::vector<Value>& source_inputs);
  // Adds a node to the new graph (attributes completed, types inferred) while
  // source node `index` is being rewritten; it takes that node's location. Its result is named `hint` when no
  // other source value has that name (so a node replacing the one being rewritten
  // takes its name), else `hint_1`, `hint_2`, ...
  Value emit(size_t index, const std::string& op, const std::vector<Value>& operands, const Attrs& attrs,
             std::string_view hint);
  // Same, for an op of several results, named after `hints` (distinct), in order.
  std::vector<Value> emit_results(size_t index, const std::string& op, const std::vector<Value>& operands,
                                  const Attrs& attrs, const std::vector<std::string>& hints);
  // Adds a fusion node with `body` whose results stand for the source values
  // `replaced` (one each, in order), under their names.
  void emit_fusion(std::shared_ptr<const Graph> body, const std::vector<Value>& operands, const Attrs& attrs,
                   const std::vector<Value>& replaced);

  // Adds the outputs in source order, each under its source name: the new value is
  // renamed when it is a result that carries no other output's name, else an
  // `identity` node carries the name. Returns the new graph.
  Graph finish();

 private:
  std::string fresh_name(size_t index, std::string_view hint) const;

  const Graph& src_;
  Graph dst_;
  std::vector<Value> map_;  // by source value id
};

}  // namespace kiln::compiler
