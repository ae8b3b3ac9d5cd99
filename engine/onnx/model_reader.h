#pragma once
// Reading an ONNX model: protobuf's parser, then the checks that tell a model
// from other bytes protobuf happens to accept, the ops kiln cannot import (all
// listed at once, with their nodes), and the ONNX library's own checker.
#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

namespace kiln::onnx {

// The parsed model; kiln::Error (without the file's name) for bytes that are not
// a (complete) ONNX model.
::onnx::ModelProto parse_model(const std::string& bytes);

// The version of the default ONNX domain the model imports.
int64_t default_opset(const ::onnx::ModelProto& model);

// Throws one kiln::Error listing every node whose op kiln cannot import.
void check_ops_supported(const ::onnx::GraphProto& graph);

// onnx::checker::check_model (node attributes against the op schemas, names
// defined before use, ...), its complaint as a kiln::Error.
void check_model(const ::onnx::ModelProto& model);

}  // namespace kiln::onnx
