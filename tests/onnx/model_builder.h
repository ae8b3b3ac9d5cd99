#pragma once
// Small ONNX models built in C++ for the import tests: nodes, typed inputs and
// outputs, initializers, serialized as a .onnx file holds them.
#include <onnx/onnx_pb.h>

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace kiln::test {

// An attribute: an int, a float, a list of ints or a tensor.
using OnnxAttr = std::variant<int64_t, float, std::vector<int64_t>, ::onnx::TensorProto>;

// A tensor of `dims` whose data is `raw` bytes (raw_data), which may disagree
// with the dims.
inline ::onnx::TensorProto raw_tensor(int32_t elem_type, const std::vector<int64_t>& dims, const std::string& raw) {
  ::onnx::TensorProto t;
  t.set_data_type(elem_type);
  for (int64_t d : dims) t.add_dims(d);
  t.set_raw_data(raw);
  return t;
}

class ModelBuilder {
 public:
  explicit ModelBuilder(int64_t opset = 17) {
    model_.set_ir_version(8);
    model_.set_producer_name("kiln tests");
    auto* o = model_.add_opset_import();
    o->set_domain("");
    o->set_version(opset);
    model_.mutable_graph()->set_name("test_model");
  }

  // A float input whose dims are values or, given as strings, symbolic (dim_param).
  ModelBuilder& input(const std::string& name, const std::vector<std::variant<int64_t, std::string>>& dims,
                      int32_t elem_type = ::onnx::TensorProto::FLOAT) {
    auto* v = model_.mutable_graph()->add_input();
    v->set_name(name);
    auto* t = v->mutable_type()->mutable_tensor_type();
    t->set_elem_type(elem_type);
    auto* shape = t->mutable_shape();
    for (const auto& d : dims) {
      auto* dim = shape->add_dim();
      if (const auto* value = std::get_if<int64_t>(&d))
        dim->set_dim_value(*value);
      else
        dim->set_dim_param(std::get<std::string>(d));
    }
    return *this;
  }

  // An output; the checker wants an element type and a shape, which the importer
  // does not read (kiln infers the outputs' types).
  ModelBuilder& output(const std::string& name, int32_t elem_type = ::onnx::TensorProto::FLOAT) {
    auto* v = model_.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(elem_type);
    v->mutable_type()->mutable_tensor_type()->mutable_shape();
    return *this;
  }

  ModelBuilder& floats(const std::string& name, const std::vector<int64_t>& dims, const std::vector<float>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::FLOAT);
    for (int64_t d : dims) t->add_dims(d);
    for (float v : values) t->add_float_data(v);
    return *this;
  }

  ModelBuilder& ints(const std::string& name, const std::vector<int64_t>& dims, const std::vector<int64_t>& values) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(::onnx::TensorProto::INT64);
    for (int64_t d : dims) t->add_dims(d);
    for (int64_t v : values) t->add_int64_data(v);
    return *this;
  }

  // An initializer of any element type and data (raw_tensor).
  ModelBuilder& initializer(const std::string& name, ::onnx::TensorProto t) {
    t.set_name(name);
    *model_.mutable_graph()->add_initializer() = std::move(t);
    return *this;
  }

  ModelBuilder& node(const std::string& op, const std::string& name, const std::vector<std::string>& inputs,
                     const std::vector<std::string>& outputs,
                     const std::vector<std::pair<std::string, OnnxAttr>>& attrs = {}) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(name);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    for (const auto& [key, value] : attrs) {
      auto* a = n->add_attribute();
      a->set_name(key);
      if (const auto* i = std::get_if<int64_t>(&value)) {
        a->set_type(::onnx::AttributeProto::INT);
        a->set_i(*i);
      } else if (const auto* f = std::get_if<float>(&value)) {
        a->set_type(::onnx::AttributeProto::FLOAT);
        a->set_f(*f);
      } else if (const auto* ints = std::get_if<std::vector<int64_t>>(&value)) {
        a->set_type(::onnx::AttributeProto::INTS);
        for (int64_t v : *ints) a->add_ints(v);
      } else {
        a->set_type(::onnx::AttributeProto::TENSOR);
        *a->mutable_t() = std::get<::onnx::TensorProto>(value);
      }
    }
    return *this;
  }

  std::string bytes() const { return model_.SerializeAsString(); }

 private:
  ::onnx::ModelProto model_;
};

}  // namespace kiln::test
