// ONNX import's errors: files that are not (whole) ONNX models, ops kiln cannot
// import (all listed at once, with their nodes), symbolic dims without values,
// bad attributes, values kiln's dtypes cannot hold. Each names the file and the
// node, input or dim.
#include <doctest/doctest.h>

#include <fstream>
#include <random>

#include "check_error.h"
#include "cli/temp_dir.h"
#include "engine/onnx/import.h"
#include "onnx/model_builder.h"

using namespace kiln;
using kiln::test::ModelBuilder;

namespace {

ModelBuilder relu_model() {
  ModelBuilder m;
  m.input("x", {int64_t{2}, int64_t{3}}).output("y").node("Relu", "act", {"x"}, {"y"});
  return m;
}

kiln::onnx::ImportedModel import(const ModelBuilder& m, const kiln::onnx::ImportOptions& options = {}) {
  return kiln::onnx::import_model_bytes(m.bytes(), "model.onnx", options);
}

}  // namespace

TEST_CASE("a missing file is an error naming it") {
  check_error([] { kiln::onnx::import_model("/nonexistent/model.onnx"); }, {"/nonexistent/model.onnx", "cannot read"});
}

TEST_CASE("a truncated model is an error naming the file, wherever it is cut") {
  const std::string bytes = relu_model().bytes();
  for (size_t keep : {size_t{0}, size_t{1}, bytes.size() / 3, bytes.size() / 2, bytes.size() - 1}) {
    INFO("kept " << keep << " of " << bytes.size() << " bytes");
    check_error([&] { kiln::onnx::import_model_bytes(bytes.substr(0, keep), "cut.onnx"); },
                {"cut.onnx", "not an ONNX model"});
  }
}

TEST_CASE("a file that is not ONNX is an error naming it") {
  TempDir dir;
  const std::string path = dir.file("model.onnx");
  std::ofstream(path) << "graph @mlp {\n  input %x : f32[2]\n  output %x\n}\n";
  check_error([&] { kiln::onnx::import_model(path); }, {path, "not an ONNX model"});
  std::mt19937 rng(7);
  for (int trial = 0; trial < 20; ++trial) {
    std::string noise(256, '\0');
    for (char& c : noise) c = static_cast<char>(rng());
    check_error([&] { kiln::onnx::import_model_bytes(noise, "noise.onnx"); }, {"noise.onnx", "not an ONNX model"});
  }
}

TEST_CASE("an op kiln cannot import is an error naming it and its node") {
  ModelBuilder m;
  m.input("x", {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}}).output("y");
  m.node("MaxPool", "pool1", {"x"}, {"y"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}});
  check_error([&] { import(m); }, {"model.onnx", "1 ONNX op that kiln cannot import", "MaxPool: node 'pool1'"});
}

TEST_CASE("every op kiln cannot import is listed at once, with all its nodes") {
  ModelBuilder m;
  m.input("x", {int64_t{1}, int64_t{1}, int64_t{4}, int64_t{4}}).output("z");
  m.node("MaxPool", "pool1", {"x"}, {"p"}, {{"kernel_shape", std::vector<int64_t>{2, 2}}})
      .node("Relu", "act", {"p"}, {"a"})
      .node("MaxPool", "pool2", {"a"}, {"q"}, {{"kernel_shape", std::vector<int64_t>{1, 1}}})
      .node("NoSuchOp", "mystery", {"q"}, {"z"});
  check_error([&] { import(m); },
              {"2 ONNX ops that kiln cannot import", "MaxPool: nodes 'pool1', 'pool2'", "NoSuchOp: node 'mystery'"});
}

TEST_CASE("symbolic dims need values: each missing one is named, and --dim or --input-shape gives it") {
  ModelBuilder m;
  m.input("x", {std::string("batch"), std::string("seq"), int64_t{3}}).output("y").node("Relu", "act", {"x"}, {"y"});
  check_error([&] { import(m); }, {"model.onnx", "input 'x' dim 0 ('batch') has no value", "--dim batch=N",
                                   "input 'x' dim 1 ('seq') has no value"});
  check_error([&] { import(m, {.dims = {{"batch", 2}}}); }, {"input 'x' dim 1 ('seq')"});
  const kiln::onnx::ImportedModel a = import(m, {.dims = {{"batch", 2}, {"seq", 5}}});
  CHECK(a.graph.type(*a.graph.find("x")).shape == Shape{2, 5, 3});
  const kiln::onnx::ImportedModel b = import(m, {.input_shapes = {{"x", {4, 1, 3}}}});
  CHECK(b.graph.type(*b.graph.find("y")).shape == Shape{4, 1, 3});
  check_error([&] { import(m, {.input_shapes = {{"x", {4, 1, 2}}}}); }, {"--input-shape x=[4,1,2] does not fit"});
  check_error([&] { import(m, {.dims = {{"batch", 2}, {"seq", 5}, {"bacth", 1}}}); }, {"--dim bacth", "no input dim"});
}

TEST_CASE("bad attributes and inputs are errors naming the node") {
  ModelBuilder axis;
  axis.input("x", {int64_t{2}, int64_t{3}}).output("y").node("Softmax", "probs", {"x"}, {"y"}, {{"axis", int64_t{5}}});
  check_error([&] { import(axis); }, {"model.onnx", "node 'probs' (Softmax)"});

  ModelBuilder wrong_kind;
  wrong_kind.input("x", {int64_t{2}, int64_t{3}}).output("y");
  wrong_kind.node("Transpose", "flip", {"x"}, {"y"}, {{"perm", int64_t{1}}});
  check_error([&] { import(wrong_kind); }, {"model.onnx", "flip"});

  ModelBuilder step;
  step.input("x", {int64_t{4}})
      .output("y")
      .ints("s", {1}, {0})
      .ints("e", {1}, {4})
      .ints("a", {1}, {0})
      .ints("k", {1}, {2});
  step.node("Slice", "every_other", {"x", "s", "e", "a", "k"}, {"y"});
  check_error([&] { import(step); }, {"node 'every_other' (Slice)", "step 2"});

  ModelBuilder dynamic_shape;
  dynamic_shape.input("x", {int64_t{6}}).input("shape", {int64_t{2}}, ::onnx::TensorProto::INT64).output("y");
  dynamic_shape.node("Reshape", "view", {"x", "shape"}, {"y"});
  check_error([&] { import(dynamic_shape); },
              {"node 'view' (Reshape)", "input 1 ('shape') must be known at import time"});
}

TEST_CASE("values kiln's dtypes cannot hold are errors naming them") {
  ModelBuilder big;
  big.input("x", {int64_t{2}}, ::onnx::TensorProto::INT64)
      .output("y", ::onnx::TensorProto::INT64)
      .ints("huge", {2}, {1, int64_t{1} << 40});
  big.node("Add", "offset", {"x", "huge"}, {"y"});
  check_error([&] { import(big); }, {"node 'offset' (Add)", "1099511627776", "does not fit in kiln's i32"});

  ModelBuilder half;
  half.input("x", {int64_t{2}}, ::onnx::TensorProto::FLOAT16)
      .output("y", ::onnx::TensorProto::FLOAT16)
      .node("Relu", "act", {"x"}, {"y"});
  check_error([&] { import(half); }, {"input 'x'", "FLOAT16", "no kiln dtype"});
}
