// ONNX import's errors: files that are not (whole) ONNX models, ops kiln cannot
// import (all listed at once, with their nodes), symbolic dims without values,
// bad attributes, values kiln's dtypes cannot hold. Each names the file and the
// node, input or dim.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <random>

#include "address_space_limit.h"
#include "check_error.h"
#include "cli/temp_dir.h"
#include "tools/onnx_import/import.h"
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

TEST_CASE("an initializer or Constant claiming more elements than its data is refused before any is made") {
  using P = ::onnx::TensorProto;
  const int64_t huge = (int64_t{1} << 62) + 1;  // 4 bytes per float: the byte count wraps to 4
  ModelBuilder init;
  init.input("x", {int64_t{1}}).output("y").initializer("w", kiln::test::raw_tensor(P::FLOAT, {huge}, "abcd"));
  init.node("Add", "add", {"x", "w"}, {"y"});
  check_error([&] { import(init); }, {"model.onnx", "initializer 'w'", "more than 2^64 bytes"});

  ModelBuilder beyond_memory;  // 2^40 int64 values hold 8 TiB
  beyond_memory.input("x", {int64_t{1}}, P::INT64)
      .output("y", P::INT64)
      .initializer("i", kiln::test::raw_tensor(P::INT64, {int64_t{1} << 40}, "abcdefgh"));
  beyond_memory.node("Add", "add", {"x", "i"}, {"y"});
  check_error([&] { import(beyond_memory); }, {"initializer 'i'", "[1099511627776]", "needs 8796093022208 bytes"});

  ModelBuilder constant;
  constant.input("x", {int64_t{1}}).output("y");
  constant.node("Constant", "k", {}, {"c"}, {{"value", kiln::test::raw_tensor(P::FLOAT, {huge}, "abcd")}})
      .node("Add", "add", {"x", "c"}, {"y"});
  check_error([&] { import(constant); }, {"node 'k' (Constant)", "more than 2^64 bytes"});

  ModelBuilder overflow;  // the element count itself overflows int64 (the checker's wraps to 0: no data passes)
  overflow.input("x", {int64_t{1}})
      .output("y")
      .initializer("w", kiln::test::raw_tensor(P::FLOAT, {int64_t{1} << 40, int64_t{1} << 40}, ""));
  overflow.node("Add", "add", {"x", "w"}, {"y"});
  check_error([&] { import(overflow); }, {"initializer 'w'", "too many elements"});
}

TEST_CASE("an opset newer than kiln implements is refused, naming it") {
  ModelBuilder m(18);
  m.input("x", {int64_t{2}}).output("y").node("Relu", "act", {"x"}, {"y"});
  check_error([&] { import(m); }, {"model.onnx", "opset 18", "kiln implements opsets 1 to 17"});
}

TEST_CASE("attributes a converter does not implement are refused, naming node, attribute and opset") {
  // Opset 6's Add broadcasts B along A's dims from `axis` on, which numpy's rules do not.
  ModelBuilder legacy(6);
  legacy.input("a", {int64_t{2}, int64_t{3}}).input("b", {int64_t{2}}).output("y");
  legacy.node("Add", "add", {"a", "b"}, {"y"}, {{"broadcast", int64_t{1}}, {"axis", int64_t{0}}});
  check_error([&] { import(legacy); }, {"model.onnx", "attributes kiln does not implement (at opset 6)",
                                        "node 'add' (Add): broadcast, axis"});

  ModelBuilder both(6);  // every problem at once: an op kiln lacks and an attribute
  both.input("a", {int64_t{2}, int64_t{3}}).input("b", {int64_t{3}}).output("y");
  both.node("Mul", "scale", {"a", "b"}, {"m"}, {{"broadcast", int64_t{1}}}).node("Selu", "selu", {"m"}, {"y"});
  check_error([&] { import(both); }, {"1 ONNX op that kiln cannot import", "Selu: node 'selu'",
                                      "node 'scale' (Mul): broadcast"});

  ModelBuilder stash;
  stash.input("x", {int64_t{2}, int64_t{4}}).output("y").floats("g", {4}, {1, 1, 1, 1});
  stash.node("LayerNormalization", "norm", {"x", "g"}, {"y"}, {{"stash_type", int64_t{11}}});
  check_error([&] { import(stash); }, {"node 'norm' (LayerNormalization)", "stash_type 11"});
}

TEST_CASE("an input whose size cannot exist is refused, naming it") {
  ModelBuilder negative;
  negative.input("x", {int64_t{2}, int64_t{-3}}).output("y").node("Relu", "act", {"x"}, {"y"});
  check_error([&] { import(negative); }, {"input 'x' dim 1 is -3"});

  ModelBuilder overflow;
  overflow.input("x", {int64_t{1} << 40, int64_t{1} << 40}).output("y").node("Relu", "act", {"x"}, {"y"});
  check_error([&] { import(overflow); }, {"input 'x'", "too many elements"});

  ModelBuilder symbolic;
  symbolic.input("x", {std::string("n"), std::string("n")}).output("y").node("Relu", "act", {"x"}, {"y"});
  check_error([&] { import(symbolic, {.dims = {{"n", int64_t{1} << 40}}}); }, {"input 'x'", "too many elements"});
  check_error([&] { import(symbolic, {.input_shapes = {{"x", {int64_t{1} << 32, int64_t{1} << 32}}}}); },
              {"input 'x'", "too many elements"});
}

TEST_CASE("a node whose result size overflows is refused, naming it") {
  ModelBuilder m;
  m.input("x", {int64_t{1}, int64_t{1}})
      .output("y")
      .ints("shape", {2}, {int64_t{1} << 40, int64_t{1} << 40})
      .node("Expand", "grow", {"x", "shape"}, {"y"});
  check_error([&] { import(m); }, {"node 'grow' (Expand)", "too many elements"});

  ModelBuilder reshape;
  reshape.input("x", {int64_t{4}}).output("y").ints("shape", {3}, {int64_t{1} << 40, int64_t{1} << 40, -1});
  reshape.node("Reshape", "view", {"x", "shape"}, {"y"});
  check_error([&] { import(reshape); }, {"node 'view' (Reshape)", "too many elements"});
}

TEST_CASE("a model file that is a device, a pipe or a directory is refused before reading") {
  check_error([] { kiln::onnx::import_model("/dev/zero"); }, {"/dev/zero", "a character device"});
  TempDir dir;
  check_error([&] { kiln::onnx::import_model(dir.path().string()); }, {dir.path().string(), "a directory"});
  const std::string fifo = dir.file("model.onnx");
  REQUIRE(mkfifo(fifo.c_str(), 0600) == 0);
  check_error([&] { kiln::onnx::import_model(fifo); }, {fifo, "a pipe"});
}

TEST_CASE("integer arithmetic folded at import whose result may not fit in i32 is refused, naming the node") {
  // ONNX computes 956301314 * 4 in int64 and Slice clamps the end to the dim; i32 would wrap it negative.
  ModelBuilder m;
  m.input("x", {int64_t{4}})
      .output("y")
      .ints("start", {1}, {0})
      .ints("big", {1}, {956301314})
      .ints("four", {1}, {4})
      .node("Mul", "end", {"big", "four"}, {"stop"})
      .node("Slice", "cut", {"x", "start", "stop"}, {"y"});
  check_error([&] { import(m); }, {"node 'end' (Mul)", "may not fit in kiln's i32", "956301314 and 4"});

  ModelBuilder sum;
  sum.input("x", {int64_t{1}})
      .output("y")
      .ints("halves", {2}, {int64_t{1} << 30, int64_t{1} << 30})
      .node("ReduceSum", "total", {"halves"}, {"n"}, {{"keepdims", int64_t{1}}})
      .node("Reshape", "view", {"x", "n"}, {"y"});
  check_error([&] { import(sum); }, {"node 'total' (ReduceSum)", "may not fit in kiln's i32"});
}

TEST_CASE("a model file beyond protobuf's 2 GiB is refused from its size, unread") {
  TempDir dir;
  const std::string path = dir.file("huge.onnx");
  std::ofstream(path).close();
  std::filesystem::resize_file(path, uint64_t{3} << 30);  // sparse: no disk used
  check_error([&] { kiln::onnx::import_model(path); }, {path, "3221225472 bytes, beyond protobuf's limit"});
}

TEST_CASE("a model is held once while imported: within twice its size, or refused naming the memory limit") {
  if (!kAddressSpaceLimitWorks) return;
  using P = ::onnx::TensorProto;
  const int64_t floats = int64_t{16} << 20;  // 64 MiB of data
  ModelBuilder m;
  m.input("x", {int64_t{1}}).output("y").initializer("w", kiln::test::raw_tensor(P::FLOAT, {floats},
                                                                                  std::string(floats * 4, '\0')));
  m.node("Mul", "scale", {"x", "w"}, {"y"});
  TempDir dir;
  const std::string path = dir.file("big.onnx");
  std::ofstream(path, std::ios::binary) << m.bytes();
  {
    const AddressSpaceLimit limit(uint64_t{200} << 20);  // the file, its parse and its tensor would not fit
    const kiln::onnx::ImportedModel imported = kiln::onnx::import_model(path);
    CHECK(imported.tensors.at("w").shape() == Shape{floats});
  }
  const AddressSpaceLimit limit(uint64_t{100} << 20);
  check_error([&] { kiln::onnx::import_model(path); },
              {path, "needs 134217", "more than the", "address-space limit", "ulimit -v"});
}

TEST_CASE("an output of a dtype kiln does not have is refused at import, naming the output and the dtype") {
  ModelBuilder shape;
  shape.input("x", {int64_t{2}, int64_t{3}}).output("s", ::onnx::TensorProto::INT64).node("Shape", "shape", {"x"}, {"s"});
  check_error([&] { import(shape); }, {"model.onnx", "output 's' is declared INT64", "does not convert to INT64"});
  for (const int32_t to : {::onnx::TensorProto::DOUBLE, ::onnx::TensorProto::INT8}) {
    ModelBuilder cast;
    cast.input("x", {int64_t{2}}).output("y", to).node("Cast", "cast", {"x"}, {"y"}, {{"to", int64_t{to}}});
    const std::string name = ::onnx::TensorProto::DataType_Name(static_cast<::onnx::TensorProto::DataType>(to));
    check_error([&] { import(cast); }, {"output 'y' is declared " + name});
  }
  // The dtypes kiln has come back as declared.
  ModelBuilder to_int32;
  to_int32.input("x", {int64_t{2}})
      .output("y", ::onnx::TensorProto::INT32)
      .node("Cast", "cast", {"x"}, {"y"}, {{"to", int64_t{::onnx::TensorProto::INT32}}});
  const kiln::onnx::ImportedModel m = import(to_int32);
  CHECK(m.graph.type(m.graph.outputs().at(0)).dtype == DType::i32);
}

TEST_CASE("an op of another ONNX domain is refused naming the op and its domain") {
  ModelBuilder m;
  m.input("x", {int64_t{2}}).output("y").node("Relu", "act", {"x"}, {"y"});
  ::onnx::ModelProto proto;
  REQUIRE(proto.ParseFromString(m.bytes()));
  proto.mutable_opset_import(0)->set_domain("ai.onnx.preview.training");
  proto.mutable_opset_import(0)->set_version(1);
  proto.mutable_graph()->mutable_node(0)->set_op_type("Adagrad");
  proto.mutable_graph()->mutable_node(0)->set_domain("ai.onnx.preview.training");
  check_error([&] { kiln::onnx::import_model_bytes(proto.SerializeAsString(), "model.onnx"); },
              {"model.onnx", "Adagrad (domain ai.onnx.preview.training", "node 'act'"});
}
