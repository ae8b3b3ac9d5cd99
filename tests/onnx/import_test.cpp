// ONNX models built in C++, imported and run: the ops' ONNX semantics (Gemm's
// flags, Reshape's 0 and -1, Softmax, ReduceMean, Erf), constants folded at
// import, symbolic dims given values, and initializers as params.
#include <doctest/doctest.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>

#include "compiler/backend.h"
#include "tools/onnx_import/fold.h"
#include "tools/onnx_import/import.h"
#include "onnx/model_builder.h"

using namespace kiln;
using kiln::test::ModelBuilder;

namespace {

const std::vector<float> kW = {0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, 0.8f, -0.9f, 1.0f, 1.1f, -1.2f,
                               -0.3f, 0.2f, 0.5f, -0.1f, 0.9f, -0.4f, 0.6f, 0.6f, -0.7f, 0.2f, 0.3f, 0.1f};
const std::vector<float> kB = {0.5f, -0.25f, 0.125f, 1.0f};

// erf(mean(softmax(reshape(0.5 * x @ W^T + b, [0, 2, -1]), axis -1), axis 1)), with
// the reshape's shape computed from Shape(x) as torch exports it.
ModelBuilder small_model(int64_t opset = 17) {
  ModelBuilder m(opset);
  m.input("x", {std::string("batch"), int64_t{6}})
      .output("y")
      .floats("W", {4, 6}, kW)
      .floats("B", {4}, kB)
      .ints("zero", {1}, {0})
      .ints("tail", {2}, {2, -1})
      .node("Gemm", "fc", {"x", "W", "B"}, {"h"}, {{"transB", int64_t{1}}, {"alpha", 0.5f}})
      .node("Shape", "shape", {"h"}, {"h_shape"})
      .node("Gather", "batch_dim", {"h_shape", "zero"}, {"batch"}, {{"axis", int64_t{0}}})
      .node("Mul", "times_zero", {"batch", "zero"}, {"zero_dim"})
      .node("Concat", "target", {"zero_dim", "tail"}, {"target_shape"}, {{"axis", int64_t{0}}})
      .node("Reshape", "split", {"h", "target_shape"}, {"r"})
      .node("Softmax", "softmax", {"r"}, {"p"}, {{"axis", int64_t{-1}}})
      .node("ReduceMean", "mean", {"p"}, {"m"}, {{"axes", std::vector<int64_t>{1}}, {"keepdims", int64_t{0}}})
      .node("Erf", "erf", {"m"}, {"y"});
  return m;
}

// The same computed directly, for x f32[batch, 6].
std::vector<float> expected(const std::vector<float>& x, int64_t batch) {
  std::vector<float> y;
  for (int64_t r = 0; r < batch; ++r) {
    float h[4];
    for (int j = 0; j < 4; ++j) {
      double acc = 0;
      for (int k = 0; k < 6; ++k) acc += x[static_cast<size_t>(r * 6 + k)] * kW[static_cast<size_t>(j * 6 + k)];
      h[j] = static_cast<float>(0.5 * acc + kB[static_cast<size_t>(j)]);
    }
    // softmax over each pair (h0, h1), (h2, h3); then element j averaged over the pairs
    double mean[2] = {0, 0};
    for (int pair = 0; pair < 2; ++pair) {
      const double a = std::exp(h[2 * pair]), b = std::exp(h[2 * pair + 1]);
      mean[0] += a / (a + b) / 2;
      mean[1] += b / (a + b) / 2;
    }
    for (double v : mean) y.push_back(static_cast<float>(std::erf(v)));
  }
  return y;
}

std::unique_ptr<Executable> executable(Graph g, const std::string& backend) {
  compiler::BackendOptions options;
  options.backend = backend;
  return compiler::make_executable(std::move(g), options);
}

Tensor run(Graph g, const Tensor& x, const std::map<std::string, Tensor>& params, const std::string& backend) {
  auto exe = executable(std::move(g), backend);
  exe->bind("x", x);
  for (const auto& [name, t] : params) exe->bind(name, t);
  exe->run();
  return exe->output(exe->output_names().at(0));
}

}  // namespace

TEST_CASE("a small model imports with its shape arithmetic folded and runs as ONNX says") {
  kiln::onnx::ImportedModel m =
      kiln::onnx::import_model_bytes(small_model().bytes(), "small.onnx", {.dims = {{"batch", 3}}});
  CHECK(m.folded_nodes == 3);  // Gather, Mul, Concat (Shape gives a constant by itself)
  CHECK(m.tensors.size() == 2);
  CHECK(m.tensors.at("W").shape() == Shape{4, 6});
  CHECK(m.graph.type(*m.graph.find("x")).shape == Shape{3, 6});
  CHECK(m.graph.type(m.graph.outputs().at(0)).shape == Shape{3, 2});
  Tensor::F32 x = Tensor::F32::from_shape({3, 6});
  for (size_t i = 0; i < x.size(); ++i) x.data()[i] = std::sin(static_cast<float>(i));
  const std::vector<float> want = expected(std::vector<float>(x.begin(), x.end()), 3);
  for (const std::string backend : {"interp", "jit"}) {
    const Tensor y = run(m.graph, Tensor(x), m.tensors, backend);
    REQUIRE(y.shape() == Shape{3, 2});
    for (size_t i = 0; i < want.size(); ++i) CHECK(y.f32().data()[i] == doctest::Approx(want[i]).epsilon(1e-6));
  }
}

TEST_CASE("float initializers become params, the other graph inputs inputs") {
  ModelBuilder mb;
  mb.input("x", {int64_t{2}, int64_t{6}}).output("h").floats("W", {4, 6}, kW).floats("B", {4}, kB);
  mb.node("Gemm", "fc", {"x", "W", "B"}, {"h"}, {{"transB", int64_t{1}}});
  const kiln::onnx::ImportedModel m = kiln::onnx::import_model_bytes(mb.bytes(), "gemm.onnx");
  CHECK(m.graph.declarations(ValueKind::param).size() == 2);
  CHECK(m.graph.declarations(ValueKind::input).size() == 1);
}

TEST_CASE("opset 12 Softmax flattens at its axis; Unsqueeze and ReduceSum take axes as attribute or input") {
  ModelBuilder m(12);
  m.input("x", {int64_t{2}, int64_t{3}, int64_t{2}})
      .output("y")
      .node("Softmax", "softmax", {"x"}, {"p"}, {{"axis", int64_t{1}}})
      .node("ReduceSum", "rows", {"p"}, {"s"}, {{"axes", std::vector<int64_t>{1, 2}}, {"keepdims", int64_t{0}}})
      .node("Unsqueeze", "unsqueeze", {"s"}, {"y"}, {{"axes", std::vector<int64_t>{-1}}});
  const kiln::onnx::ImportedModel imported = kiln::onnx::import_model_bytes(m.bytes(), "old.onnx");
  Tensor::F32 x = Tensor::F32::from_shape({2, 3, 2});
  for (size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(i) * 0.3f;
  const Tensor y = run(imported.graph, Tensor(x), {}, "interp");
  REQUIRE(y.shape() == Shape{2, 1});
  // each batch row is one softmax over its 6 elements: they sum to 1
  CHECK(y.f32()(0, 0) == doctest::Approx(1.0f));
  CHECK(y.f32()(1, 0) == doctest::Approx(1.0f));
}

TEST_CASE("an output made by Identity keeps its ONNX name") {
  ModelBuilder mb;
  mb.input("x", {int64_t{3}})
      .output("y")
      .output("z")
      .node("Relu", "act", {"x"}, {"r"})
      .node("Identity", "out", {"r"}, {"y"})
      .node("Identity", "pass", {"x"}, {"z"});
  const kiln::onnx::ImportedModel m = kiln::onnx::import_model_bytes(mb.bytes(), "identity.onnx");
  REQUIRE(m.graph.outputs().size() == 2);
  CHECK(m.graph.name_of(m.graph.outputs()[0]) == "y");
  CHECK(m.graph.name_of(m.graph.outputs()[1]) == "z");
  auto exe = executable(m.graph, "interp");
  exe->bind("x", Tensor(Tensor::F32{-1.0f, 0.5f, 2.0f}));
  exe->run();
  CHECK(exe->output("y").f32() == Tensor::F32{0.0f, 0.5f, 2.0f});
  CHECK(exe->output("z").f32() == Tensor::F32{-1.0f, 0.5f, 2.0f});
}

namespace {

// ConstantOfShape(shape) of 1.5 into ReduceSum, added to x f32[1].
ModelBuilder sum_of_constant(int64_t elements) {
  ::onnx::TensorProto one_and_a_half;
  one_and_a_half.set_data_type(::onnx::TensorProto::FLOAT);
  one_and_a_half.add_dims(1);
  one_and_a_half.add_float_data(1.5f);
  ModelBuilder m;
  m.input("x", {int64_t{1}})
      .output("y")
      .ints("shape", {1}, {elements})
      .node("ConstantOfShape", "ones", {"shape"}, {"c"}, {{"value", one_and_a_half}})
      .node("ReduceSum", "total", {"c"}, {"s"}, {{"keepdims", int64_t{0}}})
      .node("Add", "add", {"x", "s"}, {"y"});
  return m;
}

// How far f raises the peak resident memory of a process running it, in MiB (at
// most 254): f runs in a forked child, so what this process did before cannot
// hide it, and the child reports its peak's growth as its exit status.
template <class F>
int peak_rss_growth_mib(F f) {
  const pid_t pid = fork();
  REQUIRE(pid >= 0);
  if (pid == 0) {
    auto peak = [] {
      rusage usage{};
      getrusage(RUSAGE_SELF, &usage);
      return static_cast<int64_t>(usage.ru_maxrss) / 1024;
    };
    const int64_t before = peak();
    try {
      f();
    } catch (...) {
      _exit(255);
    }
    _exit(static_cast<int>(std::min<int64_t>(peak() - before, 254)));
  }
  int status = 0;
  REQUIRE(waitpid(pid, &status, 0) == pid);
  REQUIRE(WIFEXITED(status));
  REQUIRE_MESSAGE(WEXITSTATUS(status) != 255, "f failed in the child");
  return WEXITSTATUS(status);
}

}  // namespace

TEST_CASE("constants beyond the fold limit stay ops of the graph: a 1 GiB ConstantOfShape is never made at import") {
  const kiln::onnx::ImportedModel small = kiln::onnx::import_model_bytes(sum_of_constant(4).bytes(), "small.onnx");
  CHECK(small.folded_nodes == 2);  // ConstantOfShape and ReduceSum

  const int64_t over = kiln::onnx::kMaxFoldElements * 2;
  const kiln::onnx::ImportedModel m = kiln::onnx::import_model_bytes(sum_of_constant(over).bytes(), "over.onnx");
  CHECK(m.folded_nodes == 0);
  std::map<std::string, int> ops;
  for (const Node& n : m.graph.nodes()) ++ops[n.op()];
  CHECK(ops["fill"] == 1);
  CHECK(ops["sum"] == 1);
  auto exe = executable(m.graph, "interp");
  exe->bind("x", Tensor(Tensor::F32{0.25f}));
  exe->run();
  CHECK(exe->output("y").f32()(0) == 1.5f * static_cast<float>(over) + 0.25f);

  const std::string huge = sum_of_constant(int64_t{1} << 28).bytes();
  const int growth = peak_rss_growth_mib([&] {
    if (kiln::onnx::import_model_bytes(huge, "huge.onnx").folded_nodes != 0) throw std::logic_error("folded");
  });
  CHECK(growth < 64);  // MiB: the 1 GiB constant was never made
}

TEST_CASE("Flatten's axis may be negative, counted from the end: [2,3,4,5] at -1 is [24,5]") {
  for (const auto& [axis, want] : std::vector<std::pair<int64_t, Shape>>{
           {-1, {24, 5}}, {-4, {1, 120}}, {-3, {2, 60}}, {0, {1, 120}}, {4, {120, 1}}}) {
    CAPTURE(axis);
    ModelBuilder mb;
    mb.input("x", {int64_t{2}, int64_t{3}, int64_t{4}, int64_t{5}})
        .output("y")
        .node("Flatten", "flat", {"x"}, {"y"}, {{"axis", axis}});
    const kiln::onnx::ImportedModel m = kiln::onnx::import_model_bytes(mb.bytes(), "flatten.onnx");
    CHECK(m.graph.type(m.graph.outputs().at(0)).shape == want);
  }
  ModelBuilder beyond;
  beyond.input("x", {int64_t{2}, int64_t{3}}).output("y").node("Flatten", "flat", {"x"}, {"y"}, {{"axis", int64_t{-3}}});
  CHECK_THROWS_WITH_AS(kiln::onnx::import_model_bytes(beyond.bytes(), "flatten.onnx"),
                       doctest::Contains("axis -3 is out of range for rank 2"), Error);
}

TEST_CASE("Gather's indices fed at run time may be negative, counted from the end, as ONNX allows") {
  ModelBuilder mb;
  mb.input("data", {int64_t{3}, int64_t{2}})
      .input("idx", {int64_t{3}}, ::onnx::TensorProto::INT64)
      .output("y")
      .node("Gather", "take", {"data", "idx"}, {"y"}, {{"axis", int64_t{0}}});
  const kiln::onnx::ImportedModel m = kiln::onnx::import_model_bytes(mb.bytes(), "gather.onnx");
  for (const std::string backend : {"interp", "jit"}) {
    CAPTURE(backend);
    auto exe = executable(m.graph, backend);
    exe->bind("data", Tensor(Tensor::F32{{0.0f, 1.0f}, {2.0f, 3.0f}, {4.0f, 5.0f}}));
    exe->bind("idx", Tensor(Tensor::I32{-1, 0, -3}));
    exe->run();
    CHECK(exe->output("y").f32() == Tensor::F32{{4.0f, 5.0f}, {0.0f, 1.0f}, {0.0f, 1.0f}});
  }
}
