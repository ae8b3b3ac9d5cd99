#include "tools/onnx_import/import.h"

#include <onnx/onnx_pb.h>

#include <cctype>
#include <optional>
#include <set>

#include "engine/ir/verifier.h"
#include "tools/onnx_import/converters.h"
#include "tools/onnx_import/fold.h"
#include "tools/onnx_import/model_reader.h"

namespace kiln::onnx {

namespace {

// A node's scope from its ONNX name: PyTorch's exporter names nodes by module
// path and op ("/encoder/layers.0/self_attn/MatMul_1" -> encoder.layers.0.self_attn);
// a name without a path is the scope itself. Characters .kir names do not take
// become '_'; an unnamed node has no scope.
Location onnx_location(const std::string& name) {
  std::string path = name;
  while (!path.empty() && path.front() == '/') path.erase(0, 1);
  if (const size_t last = path.rfind('/'); last != std::string::npos) path.resize(last);
  for (char& ch : path)
    if (ch == '/') ch = '.';
    else if (!std::isalnum(static_cast<unsigned char>(ch)) && ch != '_' && ch != '.') ch = '_';
  if (path.empty()) return {};
  return {{path}, {}};
}

// Resolves the graph inputs' shapes; every dim without a value is reported at once.
class InputShapes {
 public:
  explicit InputShapes(const ImportOptions& options) : options_(options) {}

  Shape shape_of(const ::onnx::ValueInfoProto& in) {
    const auto& tt = in.type().tensor_type();
    const auto given = options_.input_shapes.find(in.name());
    if (given != options_.input_shapes.end()) {
      used_shapes_.insert(in.name());
      check_given(in, given->second);
      return checked_size(in, given->second);
    }
    if (!tt.has_shape()) {
      missing_.push_back("input '" + in.name() + "' has no shape (pass --input-shape " + in.name() + "=D0,D1,...)");
      return {};
    }
    Shape s;
    for (int i = 0; i < tt.shape().dim_size(); ++i) {
      const auto& d = tt.shape().dim(i);
      if (d.has_dim_value()) {
        if (d.dim_value() < 0)
          throw Error("input '" + in.name() + "' dim " + std::to_string(i) + " is " + std::to_string(d.dim_value()) +
                      ", not a size");
        s.push_back(d.dim_value());
      } else if (d.has_dim_param() && options_.dims.count(d.dim_param())) {
        used_dims_.insert(d.dim_param());
        s.push_back(options_.dims.at(d.dim_param()));
      } else {
        const std::string hint = d.has_dim_param() ? "--dim " + d.dim_param() + "=N or " : "";
        missing_.push_back("input '" + in.name() + "' dim " + std::to_string(i) +
                           (d.has_dim_param() ? " ('" + d.dim_param() + "')" : "") + " has no value (pass " + hint +
                           "--input-shape " + in.name() + "=D0,D1,...)");
      }
    }
    return checked_size(in, s);
  }

  // Throws for dims left without values and for options that name nothing.
  void finish() const {
    std::string msg;
    for (const auto& [name, value] : options_.dims)
      if (!used_dims_.count(name)) msg += "\n  --dim " + name + ": no input dim is named '" + name + "'";
    for (const auto& [name, shape] : options_.input_shapes)
      if (!used_shapes_.count(name))
        msg += "\n  --input-shape " + name + ": the graph has no input named '" + name + "'";
    for (const std::string& m : missing_) msg += "\n  " + m;
    if (!msg.empty()) throw Error("dynamic dimensions without values:" + msg);
  }

 private:
  // A shape whose element count overflows (which .kir refuses to read) is an
  // error naming the input.
  static const Shape& checked_size(const ::onnx::ValueInfoProto& in, const Shape& s) {
    try {
      numel(s);
    } catch (const Error& e) {
      throw Error("input '" + in.name() + "': " + e.what());
    }
    return s;
  }

  static void check_given(const ::onnx::ValueInfoProto& in, const Shape& given) {
    const auto& tt = in.type().tensor_type();
    if (!tt.has_shape()) return;
    bool fits = tt.shape().dim_size() == static_cast<int>(given.size());
    for (int i = 0; fits && i < tt.shape().dim_size(); ++i)
      fits = !tt.shape().dim(i).has_dim_value() || tt.shape().dim(i).dim_value() == given[static_cast<size_t>(i)];
    if (!fits)
      throw Error("--input-shape " + in.name() + "=" + shape_str(given) + " does not fit the model's shape of it");
  }

  const ImportOptions& options_;
  std::set<std::string> used_dims_, used_shapes_;
  std::vector<std::string> missing_;
};

class Importer {
 public:
  // Frees the model's initializers' data as it converts them.
  Importer(::onnx::ModelProto& model, const ImportOptions& options)
      : model_(model),
        options_(options),
        out_{.graph = Graph(kiln_name(model.graph().name().empty() ? "main" : model.graph().name()))},
        c_(out_.graph, default_opset(model), [this](Builder& b, const Constant& k, const std::string& onnx_name) {
          return materialize(b, k, onnx_name);
        }) {}

  ImportedModel run() {
    declare_inputs();
    declare_initializers();
    for (const auto& n : model_.graph().node()) convert(n);
    for (const auto& o : model_.graph().output()) declare_output(o);
    const std::vector<std::string> problems = verify_problems(out_.graph);
    if (!problems.empty()) throw Error("the imported graph does not verify: " + problems.front());
    return std::move(out_);
  }

 private:
  Graph& g() { return out_.graph; }

  // An output comes back in the dtype the model declares for it: kiln's f32, i32
  // and bool are ONNX's float, int32 and bool, and no other is converted to.
  void declare_output(const ::onnx::ValueInfoProto& o) {
    using P = ::onnx::TensorProto;
    const Value v = c_.value_of(o.name());
    const int32_t elem = o.type().tensor_type().elem_type();
    const std::string declared = "output '" + o.name() + "' is declared " +
                                 P::DataType_Name(static_cast<P::DataType>(elem));
    if (elem != P::UNDEFINED && elem != P::FLOAT && elem != P::INT32 && elem != P::BOOL)
      throw Error(declared + ": kiln's outputs are float (f32), int32 (i32) or bool, and it does not convert to " +
                  P::DataType_Name(static_cast<P::DataType>(elem)));
    const DType got = g().type(v).dtype;
    if (elem != P::UNDEFINED && dtype_for_element_type(elem) != got)
      throw Error(declared + ", but its node makes " + std::string(dtype_name(got)));
    c_.b().output(v);
  }

  // A constant the graph needs as a tensor: a fill when uniform, else a state
  // declaration whose value goes with the params.
  Value materialize(Builder& b, const Constant& k, const std::string& onnx_name) {
    const std::string name = g().fresh_name(kiln_name(onnx_name));
    const std::string what = "constant '" + onnx_name + "'";
    if (k.numel() > 0 && k.uniform()) return fill(b, k.shape, k.element(0), what, name);
    out_.tensors.emplace(name, k.to_tensor(what));
    return b.state(name, k.type(), loaded());
  }

  // The value of an imported param or state comes with the graph (out_.tensors);
  // it has no initial value to be made up when none is bound (engine/param_init.h).
  static Attrs loaded() { return {{"init", std::string("load")}}; }

  void declare_inputs() {
    std::set<std::string> initializers;
    for (const auto& t : model_.graph().initializer()) initializers.insert(t.name());
    InputShapes shapes(options_);
    std::vector<std::pair<std::string, TensorType>> inputs;
    for (const auto& in : model_.graph().input()) {
      if (initializers.count(in.name())) continue;  // IR < 4 lists initializers as inputs too
      const std::string what = "input '" + in.name() + "'";
      if (!in.type().has_tensor_type()) throw Error(what + ": not a tensor");
      const DType dtype = checked_dtype_for_element_type(in.type().tensor_type().elem_type(), what);
      inputs.emplace_back(in.name(), TensorType{dtype, shapes.shape_of(in)});
    }
    shapes.finish();
    for (const auto& [name, type] : inputs) c_.define(name, c_.b().input(g().fresh_name(kiln_name(name)), type));
  }

  // Float initializers are the trainable params; the others import-time constants.
  void declare_initializers() {
    for (auto& t : *model_.mutable_graph()->mutable_initializer()) {
      Constant k = constant_from_proto(t, "initializer '" + t.name() + "'");
      release_data(t);
      if (k.dtype != DType::f32) {
        c_.define(t.name(), std::move(k));
        continue;
      }
      const std::string name = g().fresh_name(kiln_name(t.name()));
      out_.tensors.emplace(name, k.to_tensor(name));
      c_.define(t.name(), c_.b().param(name, k.type(), loaded()));
    }
  }

  // An initializer's data is not read again once converted: freeing it keeps a
  // large model from being held twice over.
  static void release_data(::onnx::TensorProto& t) {
    ::onnx::TensorProto emptied;
    emptied.set_name(t.name());
    t.Swap(&emptied);
  }

  bool all_inputs_constant(const ::onnx::NodeProto& n) const {
    bool any = false;
    for (int i = 0; i < n.input_size(); ++i) {
      if (n.input(i).empty()) continue;
      if (!c_.is_constant(n, i)) return false;
      any = true;
    }
    return any;
  }

  void convert(const ::onnx::NodeProto& n) {
    ++out_.onnx_ops[n.op_type()];
    c_.b().set_location(onnx_location(n.name()));
    const ConvertFn& convert = find_converter(n.op_type())->convert;
    const auto first_new = static_cast<int32_t>(g().num_values());
    std::vector<Operand> results;
    try {
      std::optional<std::vector<Constant>> folded;
      if (all_inputs_constant(n)) folded = fold_node(convert, n, c_);
      if (folded) {
        for (Constant& k : *folded) results.emplace_back(std::move(k));
        ++out_.folded_nodes;
      } else {
        results = convert(c_, n);
      }
      // Every value must be one .kir can declare: a count beyond int64 is refused here.
      for (auto id = first_new; id < static_cast<int32_t>(g().num_values()); ++id) numel(g().type(Value{id}).shape);
    } catch (const NodeError&) {
      throw;
    } catch (const Error& e) {
      fail(n, e.what());
    }
    for (int i = 0; i < n.output_size(); ++i) {
      if (n.output(i).empty()) continue;
      if (static_cast<size_t>(i) >= results.size()) fail(n, "output " + std::to_string(i) + " is not supported");
      c_.define(n.output(i), results[static_cast<size_t>(i)]);
    }
    name_new_values(n, results, first_new);
  }

  // The node's results take its output names; the other values it made, those
  // names with a suffix, so the .kir reads like the ONNX graph.
  void name_new_values(const ::onnx::NodeProto& n, const std::vector<Operand>& results, int32_t first_new) {
    auto is_new_result = [&](Value v) { return v.id >= first_new && g().value(v).kind == ValueKind::result; };
    std::set<int32_t> named;
    for (size_t i = 0; i < results.size() && i < static_cast<size_t>(n.output_size()); ++i) {
      const Value* v = std::get_if<Value>(&results[i]);
      if (!v || !is_new_result(*v) || !named.insert(v->id).second) continue;
      g().rename(*v, g().fresh_name(kiln_name(n.output(static_cast<int>(i)))));
    }
    const std::string base = kiln_name(n.output_size() > 0 ? n.output(0) : n.op_type());
    for (auto id = first_new; id < static_cast<int32_t>(g().num_values()); ++id)
      if (is_new_result(Value{id}) && !named.count(id)) g().rename(Value{id}, g().fresh_name(base));
  }

  ::onnx::ModelProto& model_;
  const ImportOptions& options_;
  ImportedModel out_;
  ImportContext c_;
};

// Errors name `source`.
ImportedModel import_parsed(::onnx::ModelProto& model, const std::string& source,
                            const ImportOptions& options) {
  try {
    check_importable(model);
    check_model(model);
    return Importer(model, options).run();
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
}

::onnx::ModelProto parse_model_from(const std::string& bytes, const std::string& source) {
  try {
    return parse_model(bytes);
  } catch (const Error& e) {
    throw Error(source + ": " + e.what());
  }
}

}  // namespace

ImportedModel import_model_bytes(const std::string& bytes, const std::string& source, const ImportOptions& options) {
  ::onnx::ModelProto model = parse_model_from(bytes, source);
  return import_parsed(model, source, options);
}

ImportedModel import_model(const std::string& path, const ImportOptions& options) {
  ::onnx::ModelProto model = read_model_file(path);
  return import_parsed(model, path, options);
}

}  // namespace kiln::onnx
