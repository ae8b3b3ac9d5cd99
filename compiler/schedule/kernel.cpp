#include "compiler/schedule/kernel.h"

#include <algorithm>
#include <map>
#include <optional>

#include "engine/fnv1a.h"
#include "engine/ir/op_def.h"
#include "engine/ir/printer.h"

namespace kiln::compiler {

std::string describe(const Kernel& k) {
  std::string d = k.label;
  d += " ";
  d += std::to_string(k.graph->nodes().size());
  d += " ops";
  if (!k.graph->outputs().empty()) {
    d += " ";
    d += type_str(k.graph->type(k.graph->outputs().front()));
  }
  return d;
}

Graph canonical_copy(const Graph& g) {
  Graph out("k");
  std::vector<Value> map(g.num_values());
  size_t inputs = 0, results = 0;
  for (Value v : g.declarations())
    map[static_cast<size_t>(v.id)] =
        out.declare(g.value(v).kind, numbered("i", inputs++), g.type(v), g.value(v).attrs);
  for (const Node& n : g.nodes()) {
    std::vector<Value> operands;
    for (Value v : n.operands) operands.push_back(map[static_cast<size_t>(v.id)]);
    std::vector<TensorType> types;
    std::vector<std::string> names;
    for (Value r : n.results) {
      types.push_back(g.type(r));
      names.push_back(numbered("t", results++));
    }
    const int32_t id = out.add_node(n.def, operands, n.attrs, types, names, n.body);
    for (size_t i = 0; i < n.results.size(); ++i)
      map[static_cast<size_t>(n.results[i].id)] = out.nodes()[static_cast<size_t>(id)].results[i];
  }
  for (Value v : g.outputs()) out.add_output(map[static_cast<size_t>(v.id)]);
  return out;
}

namespace {

// A one-node graph around `node`: an input per operand (a value used twice is
// two inputs), the node, its results as outputs.
Graph one_node_graph(const Graph& g, const Node& node) {
  Graph k("k");
  std::vector<Value> operands;
  for (size_t i = 0; i < node.operands.size(); ++i)
    operands.push_back(k.declare(ValueKind::input, numbered("i", i), g.type(node.operands[i])));
  std::vector<TensorType> types;
  std::vector<std::string> names;
  for (size_t i = 0; i < node.results.size(); ++i) {
    types.push_back(g.type(node.results[i]));
    names.push_back(numbered("t", i));
  }
  const int32_t id = k.add_node(node.def, operands, node.attrs, types, names);
  for (Value r : k.nodes()[static_cast<size_t>(id)].results) k.add_output(r);
  return k;
}

// For each value k's nodes read: the one shape at which every node computing
// from it, directly or not, is pointwise (so each of its elements is read only
// at its own index), or nullopt if there is none. One pass backwards over the
// nodes: a node of 100,000 operands costs its operands once, not once per input.
std::map<int32_t, std::optional<Shape>> pointwise_shapes(const Graph& k) {
  std::map<int32_t, std::optional<Shape>> shapes;
  for (auto it = k.nodes().rbegin(); it != k.nodes().rend(); ++it) {
    const Node& n = *it;
    std::optional<Shape> shape;
    if (n.def->elementwise) shape = k.type(n.results[0]).shape;
    for (Value r : n.results) {
      if (!shape) break;
      const auto read = shapes.find(r.id);
      if (!(k.type(r).shape == *shape) || (read != shapes.end() && read->second != shape)) shape.reset();
    }
    for (Value v : n.operands)
      if (const auto [at, added] = shapes.emplace(v.id, shape); !added && at->second != shape) at->second.reset();
  }
  return shapes;
}

// A loop kernel's (input, output) pairs that may share memory: the input is read
// pointwise at its own shape, the output has that shape and element size.
std::vector<std::pair<size_t, size_t>> loop_in_place_pairs(const Graph& k) {
  std::vector<std::pair<size_t, size_t>> pairs;
  const std::map<int32_t, std::optional<Shape>> shapes = pointwise_shapes(k);
  const std::vector<Value>& inputs = k.declarations();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorType& in = k.type(inputs[i]);
    const auto read = shapes.find(inputs[i].id);
    if (in.numel() == 0 || read == shapes.end() || read->second != std::optional<Shape>(in.shape)) continue;
    for (size_t j = 0; j < k.outputs().size(); ++j) {
      const TensorType& out = k.type(k.outputs()[j]);
      if (out.shape == in.shape && dtype_size(out.dtype) == dtype_size(in.dtype)) pairs.emplace_back(i, j);
    }
  }
  return pairs;
}

// An epilogue kernel's pairs: none when the kernel op writes its result into
// the output's buffer; when it stores its result in a buffer of its own, the
// epilogue's inputs read pointwise and the outputs it computes (not the
// kernel ops' results, which are written before the epilogue reads them).
std::vector<std::pair<size_t, size_t>> epilogue_in_place_pairs(const Graph& k, const FusionRoles& roles) {
  if (!roles.stores_product) return {};
  const std::vector<Value>& outs = k.outputs();
  std::vector<bool> of_kernel_op(outs.size(), false);  // the hero's and the column sum's
  for (const int64_t op : {roles.hero, roles.column_sum})
    if (op >= 0)
      for (Value r : k.nodes()[static_cast<size_t>(op)].results)
        for (size_t j = 0; j < outs.size(); ++j) of_kernel_op[j] = of_kernel_op[j] || outs[j] == r;
  std::vector<std::pair<size_t, size_t>> pairs;
  for (const auto& pair : loop_in_place_pairs(k))
    if (!of_kernel_op[pair.second]) pairs.push_back(pair);
  return pairs;
}

// A horizontal kernel's pairs: each part's own, for the inputs that part alone
// reads, once (its parts run grouped by body, not in order). Each distinct
// body is looked at once.
std::vector<std::pair<size_t, size_t>> horizontal_in_place_pairs(const Graph& k) {
  std::vector<int> readers(k.num_values(), 0);
  constexpr size_t none = SIZE_MAX;
  std::vector<size_t> input_at(k.num_values()), output_at(k.num_values(), none);
  for (size_t i = 0; i < k.declarations().size(); ++i) input_at[static_cast<size_t>(k.declarations()[i].id)] = i;
  for (size_t j = k.outputs().size(); j-- > 0;) output_at[static_cast<size_t>(k.outputs()[j].id)] = j;
  for (const Node& part : k.nodes())
    for (Value v : part.operands) ++readers[static_cast<size_t>(v.id)];
  std::map<const Graph*, std::vector<std::pair<size_t, size_t>>> of_body;
  std::vector<std::pair<size_t, size_t>> pairs;
  for (const Node& part : k.nodes()) {
    if (!part.body) continue;  // codegen refuses the kernel
    auto [at, added] = of_body.emplace(part.body.get(), std::vector<std::pair<size_t, size_t>>{});
    if (added) at->second = loop_in_place_pairs(*part.body);
    for (auto [i, j] : at->second) {
      const Value in = part.operands[i];
      const size_t out = output_at[static_cast<size_t>(part.results[j].id)];
      if (readers[static_cast<size_t>(in.id)] == 1 && k.value(in).kind != ValueKind::result && out != none)
        pairs.emplace_back(input_at[static_cast<size_t>(in.id)], out);
    }
  }
  std::sort(pairs.begin(), pairs.end());
  return pairs;
}

}  // namespace

Kernel make_kernel(const Graph& g, const Node& node) {
  Kernel k;
  if (node.body) {
    k.graph = std::make_shared<const Graph>(canonical_copy(*node.body));
    k.roles = fusion_roles_of(node);
    // An input or epilogue kernel is named after its hero ("matmul"), as profiles always named it.
    k.label = k.roles.hero >= 0 ? k.graph->nodes()[static_cast<size_t>(k.roles.hero)].op()
                                : std::string(fusion_kind_name(k.roles.kind));
  } else {
    k.graph = std::make_shared<const Graph>(one_node_graph(g, node));
    if (node.def->kernel_op()) {
      k.roles.kind = FusionKind::input;
      k.roles.hero = 0;
    }
    k.label = node.op();
  }
  // Two kernels of one body but different kinds compile differently (a
  // verified body's roles follow from its kind).
  const FusionKind kind = k.roles.kind;
  k.text = "; kind " + std::string(fusion_kind_name(kind)) + "\n" + print_kir(*k.graph, {.locations = false});
  k.hash = fnv1a_64(k.text);
  if (kind == FusionKind::loop) k.in_place = loop_in_place_pairs(*k.graph);
  if (kind == FusionKind::epilogue) k.in_place = epilogue_in_place_pairs(*k.graph, k.roles);
  if (kind == FusionKind::horizontal) k.in_place = horizontal_in_place_pairs(*k.graph);
  // A lone op that overwrites its operand 0 (update_slice) may write into it.
  const Graph& kg = *k.graph;
  if (kg.nodes().size() == 1 && kg.nodes()[0].def->overwrites_operand0 && !kg.declarations().empty() &&
      kg.nodes()[0].operands[0] == kg.declarations()[0] && kg.outputs().size() == 1 &&
      kg.outputs()[0] == kg.nodes()[0].results[0])
    k.in_place = {{0, 0}};
  return k;
}

}  // namespace kiln::compiler
