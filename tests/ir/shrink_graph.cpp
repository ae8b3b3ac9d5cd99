#include "ir/shrink_graph.h"

#include <functional>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln::test {

namespace {

// One variant of a graph, relative to it; each field left at its default changes nothing.
struct Edit {
  int drop_output = -1;              // index into outputs()
  int raise_output = -1;             // index into outputs(): the producer's result operands become outputs instead
  int drop_assign = -1;              // node index of an assign
  int assign_to_output = -1;         // node index of an assign whose value becomes an output instead
  bool output_unused = false;        // results that nothing reads become outputs
  int cut = -1;                      // node index whose results become inputs
  int bypass = -1;                   // node index whose result becomes its operand...
  size_t operand = 0;                // ...this one
  int64_t dim_from = 0, dim_to = 0;  // every dim of size dim_from becomes dim_to
};

Shape resized(Shape s, const Edit& e) {
  for (int64_t& d : s)
    if (d == e.dim_from) d = e.dim_to;
  return s;
}

TensorType resized(TensorType t, const Edit& e) {
  t.shape = resized(t.shape, e);
  return t;
}

// Attributes that spell out a result's dims (fill, iota, reshape, broadcast,
// causal_mask) follow the declarations' dims.
Attrs resized(const Attrs& attrs, const Edit& e) {
  Attrs out = attrs;
  if (attrs.has("shape")) out.set("shape", resized(attrs.get_ints("shape"), e));
  if (attrs.has("size") && attrs.get_int("size") == e.dim_from) out.set("size", e.dim_to);
  return out;
}

struct Liveness {
  std::vector<bool> node;   // by node index
  std::vector<bool> value;  // by value id
};

// The variant's outputs, as values of g, in order and each once.
std::vector<Value> variant_outputs(const Graph& g, const Edit& e) {
  std::vector<Value> out;
  std::set<int32_t> seen;
  const auto add = [&](Value v) {
    if (seen.insert(v.id).second) out.push_back(v);
  };
  for (size_t i = 0; i < g.outputs().size(); ++i) {
    const Value v = g.outputs()[i];
    if (static_cast<int>(i) == e.drop_output) continue;
    if (static_cast<int>(i) != e.raise_output) add(v);
    else if (g.value(v).kind == ValueKind::result)
      for (Value x : g.producer(v).operands)
        if (g.value(x).kind == ValueKind::result) add(x);
  }
  if (e.assign_to_output >= 0) add(g.nodes()[static_cast<size_t>(e.assign_to_output)].operands[1]);
  if (e.output_unused) {
    std::vector<bool> read(g.num_values(), false);
    for (const Node& n : g.nodes())
      for (Value v : n.operands) read[static_cast<size_t>(v.id)] = true;
    for (const Node& n : g.nodes())
      for (Value r : n.results)
        if (!read[static_cast<size_t>(r.id)]) add(r);
  }
  return out;
}

// What a variant keeps: the nodes whose results reach a kept output or assign,
// and the values they read.
Liveness liveness(const Graph& g, const Edit& e) {
  Liveness live{std::vector<bool>(g.nodes().size(), false), std::vector<bool>(g.num_values(), false)};
  for (Value v : variant_outputs(g, e)) live.value[static_cast<size_t>(v.id)] = true;
  for (int i = static_cast<int>(g.nodes().size()); i-- > 0;) {
    const Node& n = g.nodes()[static_cast<size_t>(i)];
    bool used = n.def->side_effect && i != e.drop_assign && i != e.assign_to_output;
    for (Value r : n.results) used = used || live.value[static_cast<size_t>(r.id)];
    if (!used) continue;
    live.node[static_cast<size_t>(i)] = true;
    if (i == e.cut) continue;
    if (i == e.bypass) {
      live.value[static_cast<size_t>(n.operands[e.operand].id)] = true;
      continue;
    }
    for (Value v : n.operands) live.value[static_cast<size_t>(v.id)] = true;
  }
  return live;
}

// The variant, or nothing if it does not build or has nothing left to check.
std::optional<Graph> variant(const Graph& g, const Edit& e) {
  const Liveness live = liveness(g, e);
  Graph out(g.name());
  Builder b(out);
  std::vector<Value> map(g.num_values());
  const auto mapped = [&](Value v) { return map[static_cast<size_t>(v.id)]; };
  bool sinks = false;
  try {
    for (Value d : g.declarations())
      if (live.value[static_cast<size_t>(d.id)])
        map[static_cast<size_t>(d.id)] =
            out.declare(g.value(d).kind, g.name_of(d), resized(g.type(d), e), g.value(d).attrs);
    for (size_t i = 0; i < g.nodes().size(); ++i) {
      if (!live.node[i]) continue;
      const Node& n = g.nodes()[i];
      if (static_cast<int>(i) == e.cut) {
        for (Value r : n.results)
          map[static_cast<size_t>(r.id)] = out.declare(ValueKind::input, g.name_of(r), resized(g.type(r), e));
        continue;
      }
      if (static_cast<int>(i) == e.bypass) {
        map[static_cast<size_t>(n.results[0].id)] = mapped(n.operands[e.operand]);
        continue;
      }
      std::vector<Value> operands;
      for (Value v : n.operands) operands.push_back(mapped(v));
      std::vector<std::string> names;
      for (Value r : n.results) names.push_back(g.name_of(r));
      const std::vector<Value> results = n.body ? b.emit_fusion(n.body, operands, n.attrs, names)
                                                : b.emit(n.op(), operands, resized(n.attrs, e), names);
      for (size_t k = 0; k < results.size(); ++k) map[static_cast<size_t>(n.results[k].id)] = results[k];
      sinks = sinks || n.def->side_effect;
    }
    std::set<int32_t> seen;  // a bypass can make two outputs one value
    for (Value v : variant_outputs(g, e))
      if (seen.insert(mapped(v).id).second) out.add_output(mapped(v));
  } catch (const Error&) {
    return std::nullopt;
  }
  if (out.outputs().empty() && !sinks) return std::nullopt;
  return out;
}

// Every size above 1 that some value of `g` has, largest first.
std::vector<int64_t> sizes(const Graph& g) {
  std::set<int64_t, std::greater<>> found;
  for (size_t id = 0; id < g.num_values(); ++id)
    for (int64_t d : g.type(Value{static_cast<int32_t>(id)}).shape)
      if (d > 1) found.insert(d);
  return {found.begin(), found.end()};
}

}  // namespace

ShrinkResult shrink_graph(const Graph& g, const StillFails& still_fails, int max_tries) {
  ShrinkResult r{g};
  // Keeps the variant if it builds and still fails; indices refer to r.graph as it is.
  const auto attempt = [&](const Edit& e) {
    if (r.tries >= max_tries) return false;
    std::optional<Graph> v = variant(r.graph, e);
    if (!v) return false;
    ++r.tries;
    if (!still_fails(*v)) return false;
    r.graph = std::move(*v);
    ++r.kept;
    return true;
  };
  const auto nodes = [&] { return static_cast<int>(r.graph.nodes().size()); };
  // Drop what reaches nothing, or if the failure needs it, make it reach an output.
  if (!attempt(Edit{})) attempt({.output_unused = true});
  const auto outputs = [&] { return static_cast<int>(r.graph.outputs().size()); };
  const auto is_assign = [&](int i) { return r.graph.nodes()[static_cast<size_t>(i)].def->side_effect; };
  for (bool changed = true; changed && r.tries < max_tries;) {
    changed = false;
    // A kept variant puts another output or node at index i: try i again.
    for (int i = 0; i < outputs();)
      if (attempt({.drop_output = i}) || attempt({.raise_output = i})) changed = true;
      else ++i;
    for (int i = 0; i < nodes();)
      if (is_assign(i) && (attempt({.drop_assign = i}) || attempt({.assign_to_output = i}))) changed = true;
      else ++i;
    for (int i = 0; i < nodes();)
      if (!is_assign(i) && attempt({.cut = i})) changed = true;
      else ++i;
    for (int i = 0; i < nodes();) {
      bool kept = false;
      const Node& n = r.graph.nodes()[static_cast<size_t>(i)];  // dangles once a variant is kept
      for (size_t k = 0; !kept && k < n.operands.size(); ++k)
        if (!n.def->side_effect && n.results.size() == 1 && r.graph.type(n.operands[k]) == r.graph.type(n.results[0]))
          kept = attempt({.bypass = i, .operand = k});
      if (kept) changed = true;
      else ++i;
    }
    for (int64_t d : sizes(r.graph))
      for (int64_t to : {int64_t{1}, d / 2})
        if (to >= 1 && to < d && attempt({.dim_from = d, .dim_to = to})) {
          changed = true;
          break;
        }
  }
  return r;
}

}  // namespace kiln::test
