#pragma once
// Reading an ONNX model: protobuf's parser, then the checks that tell a model
// from other bytes protobuf happens to accept, what kiln cannot import (an opset
// newer than it knows, ops without a converter, attributes a converter does not
// implement: all listed at once, with their nodes), and the ONNX library's own
// checker.
#include <cstdint>
#include <string>

#include <onnx/onnx_pb.h>

namespace kiln::onnx {

// The model in file PATH, parsed from the file as it is read (no copy of its
// bytes is held). Only a regular file is read (a device such as /dev/zero or a
// pipe never ends or never says its size), and only once its size is known to be
// within protobuf's 2 GiB and twice its size (the parsed model, then its tensors)
// within memory_limit(). kiln::Error naming PATH otherwise, or for a file that is
// not a (complete) ONNX model.
::onnx::ModelProto read_model_file(const std::string& path);

// The same from a model's bytes; kiln::Error (without a file's name) for bytes
// that are not a (complete) ONNX model.
::onnx::ModelProto parse_model(const std::string& bytes);

// The newest opset of the default ONNX domain whose ops' semantics kiln's
// converters implement.
constexpr int64_t kMaxOpset = 17;

// The version of the default ONNX domain the model imports.
int64_t default_opset(const ::onnx::ModelProto& model);

// Throws one kiln::Error listing all kiln cannot import: an opset beyond
// kMaxOpset, every node whose op has no converter, and every node with an
// attribute its converter does not implement (OpConverter::attributes).
void check_importable(const ::onnx::ModelProto& model);

// onnx::checker::check_model (node attributes against the op schemas, names
// defined before use, ...), its complaint as a kiln::Error.
void check_model(const ::onnx::ModelProto& model);

}  // namespace kiln::onnx
