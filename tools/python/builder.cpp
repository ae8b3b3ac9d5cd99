// kiln.Builder: declarations, outputs, the generic emit() and one method per
// registered op, made from the op registry when the module loads.
#include <pybind11/stl.h>

#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"
#include "tools/python/bindings.h"

namespace kiln::python {
namespace {

struct PyBuilder {
  explicit PyBuilder(GraphPtr g) : graph(std::move(g)), b(*graph) {}
  GraphPtr graph;
  Builder b;
};

// `with b.scope('encoder.0'):`: Builder::Scope for the length of the block.
struct PyScope {
  PyBuilder* builder;
  std::string name;
  std::unique_ptr<Builder::Scope> open;
};

std::string type_name(const py::handle& h) { return py::str(h.get_type().attr("__name__")); }

DType to_dtype(const py::handle& h) {
  if (py::isinstance<DType>(h)) return h.cast<DType>();
  if (py::isinstance<py::str>(h))
    if (const auto t = parse_dtype(h.cast<std::string>())) return *t;
  throw Error("dtype: expected kiln.f32, kiln.i32, kiln.bool_ or 'f32', 'i32', 'bool', got " +
              std::string(py::repr(h)));
}

bool is_int(const py::handle& h) { return py::isinstance<py::int_>(h) && !py::isinstance<py::bool_>(h); }

// A Python int as int64; kiln::Error naming WHAT and the value if it does not fit.
int64_t to_int64(const py::handle& h, const std::string& what) {
  int overflow = 0;
  const long long v = PyLong_AsLongLongAndOverflow(h.ptr(), &overflow);
  if (overflow != 0) throw Error(what + ": " + std::string(py::str(h)) + " does not fit in int64 [-2^63, 2^63-1]");
  return v;
}

// A declaration's shape; its dims are checked by Graph::declare.
Shape to_shape(const py::handle& h, const std::string& decl) {
  const std::string what = decl + ": shape";
  if (!py::isinstance<py::sequence>(h) || py::isinstance<py::str>(h))
    throw Error(what + ": expected a list of ints, got " + std::string(py::repr(h)));
  Shape s;
  for (const py::handle d : h) {
    if (!is_int(d)) throw Error(what + ": expected a list of ints, got " + std::string(py::repr(h)));
    s.push_back(to_int64(d, what + " " + std::string(py::repr(h))));
  }
  return s;
}

// A Python value as an attribute, by its Python type (the op's schema then
// checks the kind: complete_attrs). A str is a dtype where the schema wants one.
Attr to_attr(const OpDef* def, const std::string& name, const py::handle& h) {
  const auto wants = [&](AttrKind kind) {
    if (def)
      for (const AttrSpec& s : def->attrs)
        if (s.name == name) return s.kind == kind;
    return false;
  };
  if (py::isinstance<DType>(h)) return h.cast<DType>();
  if (py::isinstance<py::bool_>(h)) return h.cast<bool>();
  if (py::isinstance<py::int_>(h)) return to_int64(h, "attribute '" + name + "'");
  if (py::isinstance<py::float_>(h)) return h.cast<double>();
  if (py::isinstance<py::str>(h)) return wants(AttrKind::dtype) ? Attr(to_dtype(h)) : Attr(h.cast<std::string>());
  if (py::isinstance<py::sequence>(h)) {
    std::vector<int64_t> ints;
    for (const py::handle e : h) {
      if (!is_int(e))
        throw Error("attribute '" + name + "': a list attribute holds ints, got " + std::string(py::repr(h)));
      ints.push_back(to_int64(e, "attribute '" + name + "' " + std::string(py::repr(h))));
    }
    return ints;
  }
  throw Error("attribute '" + name + "': a " + type_name(h) +
              " is no attribute value (int, float, bool, str, list of ints, kiln.DType)");
}

Attrs to_attrs(const OpDef* def, const py::dict& d) {
  Attrs attrs;
  for (const auto& [k, v] : d) {
    if (!py::isinstance<py::str>(k)) throw Error("attribute names are str, got " + std::string(py::repr(k)));
    const auto name = k.cast<std::string>();
    attrs.set(name, to_attr(def, name, v));
  }
  return attrs;
}

std::vector<std::string> result_names(const py::object& name) {
  if (name.is_none()) return {};
  if (py::isinstance<py::str>(name)) return {name.cast<std::string>()};
  const auto wrong = [&] { return Error("name: expected a str or a list of str, got " + std::string(py::repr(name))); };
  if (!py::isinstance<py::sequence>(name)) throw wrong();
  std::vector<std::string> names;
  for (const py::handle n : name) {
    if (!py::isinstance<py::str>(n)) throw wrong();
    names.push_back(n.cast<std::string>());
  }
  return names;
}

// One Value for an op with one result, a tuple for several, None for none (assign).
py::object emit(PyBuilder& self, const std::string& op, const py::sequence& operands, const py::dict& attrs,
                const py::object& name) {
  const OpDef* def = OpRegistry::global().find(op);
  std::vector<Value> vs;
  for (size_t i = 0; i < operands.size(); ++i)
    vs.push_back(find_value(*self.graph, operands[i], op + ": operand " + std::to_string(i + 1)));
  const std::vector<Value> results = self.b.emit(op, vs, to_attrs(def, attrs), result_names(name));
  if (results.empty()) return py::none();
  if (results.size() == 1) return py::cast(PyValue{self.graph, results[0]});
  py::tuple out(results.size());
  for (size_t i = 0; i < results.size(); ++i) out[i] = PyValue{self.graph, results[i]};
  return out;
}

PyValue declare(PyBuilder& self, ValueKind kind, const std::string& name, const py::handle& dtype,
                const py::handle& shape, const py::dict& attrs) {
  const std::string decl = std::string(value_kind_name(kind)) + " %" + name;
  return {self.graph,
          self.graph->declare(kind, name, {to_dtype(dtype), to_shape(shape, decl)}, to_attrs(nullptr, attrs))};
}

// "sum(self, x1, *, axes: int list = [], keepdims: bool = false, name=None)\n\nSUMMARY": an op method's docstring.
std::string op_doc(const OpDef& def) {
  std::string sig = def.name + "(self";
  for (int i = 0; i < def.min_operands; ++i) sig += ", x" + std::to_string(i + 1);
  if (def.max_operands < 0) sig += ", *more";
  else
    for (int i = def.min_operands; i < def.max_operands; ++i) sig += ", x" + std::to_string(i + 1) + "=None";
  sig += ", *";
  for (const AttrSpec& a : def.attrs) {
    sig += ", " + a.name + ": " + std::string(attr_kind_name(a.kind));
    if (a.default_value) sig += " = " + attr_str(*a.default_value);
  }
  return sig + ", name=None)\n\n" + def.summary +
         "\n\nAdds the op to the graph and returns its result (a kiln.Value; a tuple for several,\n"
         "None for none). Operands are kiln.Values of this graph or their names; attributes are\n"
         "keywords; `name` names the result. kiln.Error names the op and its operand types on a mistake.";
}

// Builder.<op>(*operands, name=None, **attrs) for every registered op that needs
// no body and whose name the Builder does not already use.
void define_op_methods(py::class_<PyBuilder>& cls) {
  for (const OpDef* def : OpRegistry::global().all()) {
    if (def->has_body || py::hasattr(cls, def->name.c_str())) continue;
    const std::string op = def->name;
    cls.def(
        op.c_str(),
        [op](PyBuilder& self, const py::args& operands, const py::kwargs& kwargs) {
          py::dict attrs = py::reinterpret_borrow<py::dict>(kwargs);
          py::object name = attrs.contains("name") ? attrs.attr("pop")("name") : py::none();
          return emit(self, op, operands, attrs, name);
        },
        op_doc(*def).c_str());
  }
}

}  // namespace

void define_builder(py::module_& m) {
  py::class_<PyBuilder> cls(
      m, "Builder",
      "Adds declarations and ops to a kiln.Graph, inferring each result's type as it goes.\n\n"
      "    g = kiln.Graph('mlp'); b = kiln.Builder(g)\n"
      "    x = b.input('x', kiln.f32, [8, 16]); w = b.param('w', kiln.f32, [16, 4])\n"
      "    y = b.relu(b.matmul(x, w), name='y'); b.output(y)\n\n"
      "Every registered op is a method (b.add(x, y), b.sum(x, axes=[1], keepdims=True));\n"
      "b.emit(op, operands, attrs) is the same for an op given by name.");
  cls.def(py::init<GraphPtr>(), py::arg("graph"), "A builder adding to `graph`.")
      .def_readonly("graph", &PyBuilder::graph, "The graph being built.")
      .def(
          "input",
          [](PyBuilder& self, const std::string& name, const py::handle& dtype, const py::handle& shape) {
            return declare(self, ValueKind::input, name, dtype, shape, {});
          },
          py::arg("name"), py::arg("dtype"), py::arg("shape"),
          "Declares an input (fed on every run): b.input('x', kiln.f32, [8, 16]).")
      .def(
          "param",
          [](PyBuilder& self, const std::string& name, const py::handle& dtype, const py::handle& shape,
             const py::kwargs& attrs) { return declare(self, ValueKind::param, name, dtype, shape, attrs); },
          py::arg("name"), py::arg("dtype"), py::arg("shape"),
          "Declares a param (persistent, trainable). Keywords are declaration attributes,\n"
          "e.g. init='ones' or init='normal', std=0.02 (see the README's param initialization).")
      .def(
          "state",
          [](PyBuilder& self, const std::string& name, const py::handle& dtype, const py::handle& shape,
             const py::kwargs& attrs) { return declare(self, ValueKind::state, name, dtype, shape, attrs); },
          py::arg("name"), py::arg("dtype"), py::arg("shape"),
          "Declares a state value (persistent, not trainable); keywords as for param().")
      .def(
          "output",
          [](PyBuilder& self, const py::handle& v) { self.b.output(find_value(*self.graph, v, "output")); },
          py::arg("value"), "Makes a value (or the value of that name) an output of the graph.")
      .def(
          "emit",
          [](PyBuilder& self, const std::string& op, const py::sequence& operands, const py::object& attrs,
             const py::object& name) {
            return emit(self, op, operands, attrs.is_none() ? py::dict() : py::dict(attrs), name);
          },
          py::arg("op"), py::arg("operands"), py::arg("attrs") = py::none(), py::arg("name") = py::none(),
          "Adds `op(operands) {attrs}`: b.emit('matmul', [x, w], {'transpose_b': True}).\n\n"
          "Returns the result (a kiln.Value; a tuple for several, None for none); `name` (a str,\n"
          "or a list for several results) names the results. kiln.Error names the op and its\n"
          "operand types on any mistake (unknown op, wrong operand count, types or attributes).");
  cls.def(
      "scope", [](PyBuilder& self, const std::string& name) { return PyScope{&self, name, nullptr}; },
      py::arg("name"), py::keep_alive<0, 1>(),
      "A model scope for the ops added in a with-block, nested in the scope around it:\n\n"
      "    with b.scope('encoder'), b.scope('0'):\n"
      "        h = b.relu(b.matmul(x, w))   # h.scopes == ['encoder.0']\n\n"
      "Scopes print as .kir's loc(...), survive every pass and name kernels in profiles and dumps\n"
      "(kiln profile --by scope). kiln.Error for a name .kir cannot write.");
  py::class_<PyScope>(m, "Scope", "What Builder.scope returns: a context manager.")
      .def("__enter__",
           [](PyScope& s) {
             if (s.open) throw Error("scope '" + s.name + "' is already open");
             s.open = std::make_unique<Builder::Scope>(s.builder->b, s.name);
           })
      .def("__exit__", [](PyScope& s, const py::args&) { s.open.reset(); });
  define_op_methods(cls);
}

}  // namespace kiln::python
