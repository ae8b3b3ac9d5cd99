// kiln.DType, kiln.Value, kiln.Graph, kiln.parse / kiln.load and kiln.ops().
#include <pybind11/stl.h>

#include "engine/ir/dot.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "tools/python/bindings.h"

namespace kiln::python {
namespace {

py::tuple shape_tuple(const Shape& s) {
  py::tuple t(s.size());
  for (size_t i = 0; i < s.size(); ++i) t[i] = s[i];
  return t;
}

// "%x : f32[2,3]"
std::string value_str(const PyValue& v) {
  return "%" + v.graph->name_of(v.value) + " : " + type_str(v.graph->type(v.value));
}

std::vector<PyValue> values(const GraphPtr& g, const std::vector<Value>& vs) {
  std::vector<PyValue> out;
  for (Value v : vs) out.push_back({g, v});
  return out;
}

// "1 operand", "1-2 operands", "2+ operands", as `kiln ops` writes them.
std::string operand_count(const OpDef& def) {
  std::string s = std::to_string(def.min_operands);
  if (def.max_operands < 0) s += "+";
  else if (def.max_operands != def.min_operands) s += "-" + std::to_string(def.max_operands);
  return s + (def.max_operands == 1 ? " operand" : " operands");
}

void define_dtype(py::module_& m) {
  py::enum_<DType>(m, "DType", "A tensor element type: f32, i32 or bool.")
      .value("f32", DType::f32)
      .value("i32", DType::i32)
      .value("bool", DType::boolean)
      .def("__str__", [](DType t) { return std::string(dtype_name(t)); });
  m.attr("f32") = DType::f32;
  m.attr("i32") = DType::i32;
  m.attr("bool_") = DType::boolean;  // numpy's spelling: `bool` is Python's
}

void define_value(py::module_& m) {
  py::class_<PyValue>(m, "Value",
                      "One SSA value of a graph: a declaration (input, param, state) or a node's result.\n"
                      "str(v) is its .kir form, e.g. '%h : f32[8,32]'.")
      .def_property_readonly(
          "name", [](const PyValue& v) { return v.graph->name_of(v.value); }, "The value's name, without the '%'.")
      .def_property_readonly(
          "dtype", [](const PyValue& v) { return v.graph->type(v.value).dtype; }, "Its kiln.DType.")
      .def_property_readonly(
          "shape", [](const PyValue& v) { return shape_tuple(v.graph->type(v.value).shape); },
          "Its static shape, a tuple (() for a scalar).")
      .def_property_readonly(
          "type", [](const PyValue& v) { return type_str(v.graph->type(v.value)); },
          "Its type as .kir writes it, e.g. 'f32[8,32]'.")
      .def_property_readonly(
          "kind", [](const PyValue& v) { return std::string(value_kind_name(v.graph->value(v.value).kind)); },
          "'input', 'param', 'state' or 'result'.")
      .def_property_readonly(
          "graph", [](const PyValue& v) { return v.graph; }, "The graph it belongs to.")
      .def_property_readonly(
          "scopes",
          [](const PyValue& v) {
            const ValueInfo& info = v.graph->value(v.value);
            return info.kind == ValueKind::result ? v.graph->producer(v.value).loc.scopes : std::vector<std::string>{};
          },
          "The model scopes of the node that makes it (Builder.scope, .kir's loc(...)), sorted;\n"
          "[] for a declaration or a node made outside any scope.")
      .def("__str__", value_str)
      .def("__repr__", [](const PyValue& v) { return "<kiln.Value " + value_str(v) + ">"; })
      .def("__eq__", [](const PyValue& a, const PyValue& b) { return a.graph == b.graph && a.value == b.value; })
      .def("__hash__", [](const PyValue& v) {
        return py::hash(py::make_tuple(reinterpret_cast<uintptr_t>(v.graph.get()), v.value.id));
      });
}

void define_graph_class(py::module_& m) {
  py::class_<Graph, GraphPtr>(m, "Graph",
                              "A graph of typed tensor ops (the .kir form's graph @NAME { ... }).\n\n"
                              "Build one with kiln.Builder(kiln.Graph('name')), or read one with kiln.parse\n"
                              "or kiln.load. str(graph) is its canonical .kir text, which parses back to itself.")
      .def(py::init<std::string>(), py::arg("name") = "main",
           "An empty graph named `name` (letters, digits, '_' and '.': what .kir can write).")
      .def_property("name", &Graph::name, &Graph::set_name,
                    "The graph's name (graph @NAME); kiln.Error for one .kir cannot write.")
      .def_property_readonly(
          "inputs", [](const GraphPtr& g) { return values(g, g->declarations(ValueKind::input)); },
          "The inputs (fed on every run), in declaration order.")
      .def_property_readonly(
          "params", [](const GraphPtr& g) { return values(g, g->declarations(ValueKind::param)); },
          "The params (persistent, trainable), in declaration order.")
      .def_property_readonly(
          "state", [](const GraphPtr& g) { return values(g, g->declarations(ValueKind::state)); },
          "The state (persistent, not trainable), in declaration order.")
      .def_property_readonly(
          "outputs", [](const GraphPtr& g) { return values(g, g->outputs()); }, "The outputs, in order.")
      .def_property_readonly(
          "num_nodes", [](const Graph& g) { return g.nodes().size(); }, "How many nodes (ops) the graph has.")
      .def(
          "value",
          [](const GraphPtr& g, const std::string& name) {
            return PyValue{g, find_value(*g, py::str(name), "value")};
          },
          py::arg("name"), "The value named `name`; kiln.Error if there is none.")
      .def("__contains__", [](const Graph& g, const std::string& name) { return g.find(name).has_value(); })
      .def(
          "verify", [](const Graph& g) { verify(g); },
          "Checks every invariant of the graph; kiln.Error listing each problem, one a line.")
      .def(
          "to_kir", [](const Graph& g) { return print_kir(g); }, "The canonical .kir text (what `kiln check` prints).")
      .def(
          "to_dot", [](const Graph& g) { return to_dot(g); }, "The graph as Graphviz DOT (what `kiln dot` prints).")
      .def(
          "copy", [](const Graph& g) { return std::make_shared<Graph>(g); }, "An independent copy.")
      .def("__copy__", [](const Graph& g) { return std::make_shared<Graph>(g); })
      .def("__deepcopy__", [](const Graph& g, py::dict) { return std::make_shared<Graph>(g); })
      .def("__str__", [](const Graph& g) { return print_kir(g); })
      .def("__repr__", [](const Graph& g) {
        return "<kiln.Graph @" + g.name() + ": " + std::to_string(g.declarations().size()) + " declarations, " +
               std::to_string(g.nodes().size()) + " nodes, " + std::to_string(g.outputs().size()) + " outputs>";
      });
}

void define_op_info(py::module_& m) {
  py::class_<OpDef>(m, "OpInfo", "A registered op: its name, operand count, attributes and summary (kiln.ops()).")
      .def_readonly("name", &OpDef::name)
      .def_readonly("summary", &OpDef::summary)
      .def_readonly("min_operands", &OpDef::min_operands)
      .def_property_readonly(
          "max_operands",
          [](const OpDef& d) { return d.max_operands < 0 ? py::object(py::none()) : py::int_(d.max_operands); },
          "The most operands it takes; None: any number.")
      .def_property_readonly(
          "attrs",
          [](const OpDef& d) {
            py::dict out;
            for (const AttrSpec& a : d.attrs)
              out[py::str(a.name)] = py::make_tuple(std::string(attr_kind_name(a.kind)),
                                                    a.default_value ? py::object(py::str(attr_str(*a.default_value)))
                                                                    : py::object(py::none()));
            return out;
          },
          "{name: (kind, default as .kir writes it, or None if required)}.")
      .def("__repr__", [](const OpDef& d) { return "<kiln.OpInfo " + d.name + " (" + operand_count(d) + ")>"; });
}

}  // namespace

Value find_value(const Graph& g, const py::handle& name_or_value, const std::string& what) {
  if (py::isinstance<PyValue>(name_or_value)) {
    const auto& v = name_or_value.cast<const PyValue&>();
    if (v.graph.get() != &g)
      throw Error(what + " " + value_str(v) + ": belongs to graph @" + v.graph->name() + ", not to this graph @" +
                  g.name());
    return v.value;
  }
  if (!py::isinstance<py::str>(name_or_value))
    throw Error(what + ": expected a value name (str) or a kiln.Value, got " +
                std::string(py::str(name_or_value.get_type().attr("__name__"))));
  const auto name = name_or_value.cast<std::string>();
  const auto v = g.find(name);
  if (!v) throw Error(what + " " + name + ": graph @" + g.name() + " has no value named '" + name + "'");
  return *v;
}

void define_graph(py::module_& m) {
  define_dtype(m);
  define_value(m);
  define_graph_class(m);
  define_op_info(m);
  m.def(
      "parse",
      [](const std::string& text, const std::string& filename) {
        return std::make_shared<Graph>(parse_kir(text, filename));
      },
      py::arg("text"), py::arg("filename") = "<string>",
      "Parses .kir text into a verified kiln.Graph.\n\n"
      "kiln.ParseError 'FILENAME:LINE:COL: error: ...' (with .file, .line, .col) names\n"
      "the first problem and what was expected there.");
  m.def(
      "load", [](const std::string& path) { return std::make_shared<Graph>(parse_kir_file(path)); },
      py::arg("path"),
      "Reads and parses a .kir file (as `kiln check` does): kiln.ParseError for bad text,\n"
      "kiln.Error for a file that cannot be read.");
  m.def(
      "ops", [] { return OpRegistry::global().all(); }, py::return_value_policy::reference,
      "The registered ops, sorted by name, as kiln.OpInfo (what `kiln ops` lists).");
}

}  // namespace kiln::python
