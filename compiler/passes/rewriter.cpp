#include "compiler/passes/rewriter.h"

#include <set>
#include <unordered_map>

#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {

ExtractedBody extract_body(const Graph& g, const std::vector<size_t>& nodes, const std::vector<Value>& outputs,
                           const std::string& name) {
  ExtractedBody out{std::make_shared<Graph>(name), {}};
  Graph& body = *out.graph;
  std::unordered_map<int32_t, Value> inner;  // g's value id -> the body's value
  const auto value_in_body = [&](Value v) {
    if (const auto it = inner.find(v.id); it != inner.end()) return it->second;
    const std::string input_name = body.fresh_name(numbered("p", out.inputs.size()));
    const Value in = body.declare(ValueKind::input, input_name, g.type(v));
    out.inputs.push_back(v);
    return inner[v.id] = in;
  };
  for (size_t i : nodes) {
    const Node& n = g.nodes()[i];
    std::vector<Value> operands;
    for (Value v : n.operands) operands.push_back(value_in_body(v));
    std::vector<TensorType> types;
    std::vector<std::string> names;
    for (Value r : n.results) {
      types.push_back(g.type(r));
      names.push_back(body.fresh_name(g.name_of(r)));
    }
    const int32_t id = body.add_node(n.def, operands, n.attrs, types, names, n.body, n.loc);
    const Node& made = body.nodes()[static_cast<size_t>(id)];
    for (size_t k = 0; k < n.results.size(); ++k) inner[n.results[k].id] = made.results[k];
  }
  for (Value v : outputs) body.add_output(inner.at(v.id));
  return out;
}

GraphRewriter::GraphRewriter(const Graph& source) : src_(source), dst_(source.name()), map_(source.num_values()) {
  for (Value v : src_.declarations()) {
    const ValueInfo& info = src_.value(v);
    map_[static_cast<size_t>(v.id)] = dst_.declare(info.kind, info.name, info.type, info.attrs);
  }
}

Value GraphRewriter::map(Value source_value) const {
  const Value v = map_.at(static_cast<size_t>(source_value.id));
  if (!v.valid()) throw Error("pass rewriter: %" + src_.name_of(source_value) + " used before it was visited");
  return v;
}

std::vector<Value> GraphRewriter::mapped_operands(const Node& n) const {
  std::vector<Value> out;
  for (Value v : n.operands) out.push_back(map(v));
  return out;
}

void GraphRewriter::copy(size_t index) {
  const Node& n = src_.nodes()[index];
  std::vector<TensorType> types;
  std::vector<std::string> names;
  for (Value r : n.results) {
    types.push_back(src_.type(r));
    names.push_back(src_.name_of(r));
  }
  const int32_t id = dst_.add_node(n.def, mapped_operands(n), n.attrs, types, names, n.body, n.loc);
  const Node& copied = dst_.nodes()[static_cast<size_t>(id)];
  for (size_t i = 0; i < n.results.size(); ++i) replace(n.results[i], copied.results[i]);
}

void GraphRewriter::replace(Value from, Value to) { map_.at(static_cast<size_t>(from.id)) = to; }

void GraphRewriter::merge_location(Value target_value, const Location& loc) {
  dst_.merge_location(dst_.value(target_value).node, loc);
}

void GraphRewriter::inherit_locations(Value target_value, Value source_output, const std::vector<Value>& source_inputs) {
  std::set<int32_t> seen;
  for (Value v : source_inputs) seen.insert(v.id);
  std::vector<Value> todo{source_output};
  Location loc;
  while (!todo.empty()) {
    const Value v = todo.back();
    todo.pop_back();
    if (!seen.insert(v.id).second || src_.value(v).kind != ValueKind::result) continue;
    const Node& n = src_.producer(v);
    loc.merge(n.loc);
    todo.insert(todo.end(), n.operands.begin(), n.operands.end());
  }
  merge_location(target_value, loc);
}

// A name free in the new graph that no source value other than a result of node
// `index` has: later source nodes keep their names when copied, and outputs are
// renamed to theirs in finish().
std::string GraphRewriter::fresh_name(size_t index, std::string_view hint) const {
  const auto taken = [&](const std::string& name) {
    if (dst_.find(name)) return true;
    const auto v = src_.find(name);
    return v && src_.value(*v).node != static_cast<int32_t>(index);
  };
  const std::string base = hint.empty() ? "t" : std::string(hint);
  if (!taken(base)) return base;
  for (int i = 1;; ++i) {
    std::string candidate = base + "_" + std::to_string(i);
    if (!taken(candidate)) return candidate;
  }
}

Value GraphRewriter::emit(size_t index, const std::string& op, const std::vector<Value>& operands, const Attrs& attrs,
                          std::string_view hint) {
  Builder b(dst_);
  b.set_location(src_.nodes()[index].loc);
  return b.emit1(op, operands, attrs, fresh_name(index, hint));
}

std::vector<Value> GraphRewriter::emit_results(size_t index, const std::string& op,
                                               const std::vector<Value>& operands, const Attrs& attrs,
                                               const std::vector<std::string>& hints) {
  std::vector<std::string> names;
  for (const std::string& hint : hints) names.push_back(fresh_name(index, hint));
  Builder b(dst_);
  b.set_location(src_.nodes()[index].loc);
  return b.emit(op, operands, attrs, names);
}

void GraphRewriter::emit_fusion(std::shared_ptr<const Graph> body, const std::vector<Value>& operands,
                                const Attrs& attrs, const std::vector<Value>& replaced) {
  std::vector<std::string> names;
  for (Value v : replaced) names.push_back(src_.name_of(v));
  Builder b(dst_);
  const std::vector<Value> results = b.emit_fusion(std::move(body), operands, attrs, names);
  for (size_t i = 0; i < results.size(); ++i) replace(replaced[i], results[i]);
}

Graph GraphRewriter::finish() {
  std::set<std::string> output_names;
  for (Value v : src_.outputs()) output_names.insert(src_.name_of(v));
  for (Value out : src_.outputs()) {
    const std::string& name = src_.name_of(out);
    Value v = map(out);
    if (dst_.name_of(v) != name) {
      // The name is free: only the source value `out` had it, and its node was not copied.
      const bool renamable = dst_.value(v).kind == ValueKind::result && !output_names.count(dst_.name_of(v));
      if (renamable) {
        dst_.rename(v, name);
      } else {
        Builder b(dst_);
        v = b.emit1("identity", {v}, {}, name);
      }
    }
    dst_.add_output(v);
  }
  return std::move(dst_);
}

}  // namespace kiln::compiler
