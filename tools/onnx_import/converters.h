#pragma once
// The table of ONNX op converters, one row per ONNX op (default domain): each
// turns one node into kiln ops through the Builder, or into import-time
// constants (Shape, Constant). Rows live with their family: convert_math.cpp
// (elementwise, matmul, normalization, reductions), convert_shape.cpp (shapes,
// constants, indexing).
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tools/onnx_import/import_context.h"

namespace kiln::onnx {

// One result per node output (fewer if the trailing outputs are not supported).
using ConvertFn = std::function<std::vector<Operand>(ImportContext&, const ::onnx::NodeProto&)>;

struct OpConverter {
  std::string onnx_op;
  ConvertFn convert;
  // The attributes `convert` implements; a node with any other is refused before
  // import (an older opset's semantics, such as Add's broadcast and axis, or a
  // newer one's), never imported with that attribute ignored.
  std::vector<std::string> attributes = {};
};

std::vector<OpConverter> math_converters();
std::vector<OpConverter> shape_converters();

// What converters share: x reshaped to `shape` (x itself if it has that shape),
// a `fill` of `shape` with a scalar constant's value (named `name`, or fresh;
// kiln::Error naming `what` if an integer does not fit in i32), and the product
// of dims [begin, end) of s.
Value reshape(ImportContext& c, Value x, const Shape& shape);
Value fill(Builder& b, const Shape& shape, const Constant& scalar, const std::string& what,
           const std::string& name = {});
int64_t dims_product(const Shape& s, size_t begin, size_t end);

// The row of an ONNX op type; null if kiln cannot import the op.
const OpConverter* find_converter(const std::string& op_type);

}  // namespace kiln::onnx
