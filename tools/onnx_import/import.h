#pragma once
// ONNX import: an ONNX model file (ONNX 1.12's protobuf, any opset the op
// converters cover) as a kiln Graph plus the values of its params and state.
//
// - Graph inputs that are not initializers become `input`s; their dims must all
//   have values: a symbolic dim (dim_param) takes one from ImportOptions::dims,
//   or the whole shape from ImportOptions::input_shapes.
// - Float initializers become `param`s (trainable); integer and bool
//   initializers, Constant nodes, Shape and everything computed from those alone
//   are import-time constants (fold.h). A constant the graph needs as a tensor
//   becomes a `fill` if all its elements are equal, else a `state` declaration.
//   Params and state are declared {init="load"}: their values (`tensors`) come
//   with the graph and must be bound, never made up (engine/param_init.h).
// - What kiln does not implement is refused, not approximated: an opset beyond
//   17, an op without a converter, an attribute a converter does not read
//   (model_reader.h), integer arithmetic whose result may not fit in i32 (fold.h).
// - Element types: float and double become f32 (a double beyond f32's range is
//   an error), int64 and the narrower integers i32 (a value beyond i32's range
//   is an error naming it, when it is needed as a tensor), bool stays bool;
//   others (float16, strings, ...) are errors naming the input or node.
// - Names become kiln identifiers (kiln_name in import_context.h).
// Every op the model uses that kiln cannot import is listed at once, with its
// nodes, before anything else is done. Errors are kiln::Error naming the file
// and the node (name and op type), input or dim.
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "engine/ir/graph.h"
#include "engine/tensor/tensor.h"

namespace kiln::onnx {

struct ImportOptions {
  std::map<std::string, int64_t> dims = {};        // dim_param name -> value
  std::map<std::string, Shape> input_shapes = {};  // ONNX input name -> its whole shape
};

struct ImportedModel {
  Graph graph;
  // The value of every param and state of `graph`, by kiln name (what
  // `kiln run --load DIR` binds from DIR/NAME.npy).
  std::map<std::string, Tensor> tensors = {};
  // The ONNX op types of the model's nodes with their counts, and how many
  // nodes were folded into constants at import.
  std::map<std::string, int64_t> onnx_ops = {};
  int64_t folded_nodes = 0;
};

// Reads and imports PATH. The op registry must be filled (register_all_ops()).
ImportedModel import_model(const std::string& path, const ImportOptions& options = {});
// The same from the file's bytes; errors name `source`.
ImportedModel import_model_bytes(const std::string& bytes, const std::string& source,
                                 const ImportOptions& options = {});

// The ONNX op types kiln imports, sorted.
std::vector<std::string> importable_onnx_ops();

}  // namespace kiln::onnx
