// ONNX's own backend node tests (the installed onnx package writes them:
// generate_node_tests.py), each imported and run through the JIT: every test
// passes (outputs of the model's declared dtype and shape, values within ONNX's
// tolerances rtol 1e-3, atol 1e-7), or is refused at import with a kiln::Error
// naming what is unsupported. A test that runs and differs, or fails at run
// time, fails the suite. KILN_ONNX_NODE_DATA=DIR reads the tests from DIR/node
// instead of generating them; KILN_ONNX_NODE_TABLE=FILE writes the table of
// claimed ops x tests that tools/onnx_import/README.md shows.
#include <doctest/doctest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "cli/temp_dir.h"
#include "compiler/backend.h"
#include "tools/onnx_import/constant.h"
#include "tools/onnx_import/converters.h"
#include "tools/onnx_import/import.h"
#include "tools/onnx_import/model_reader.h"

using namespace kiln;
namespace fs = std::filesystem;

namespace {

enum class Outcome { passed, refused, differing };

struct Result {
  Outcome outcome;
  std::string detail;  // why refused or how it differs
};

::onnx::TensorProto read_tensor(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  ::onnx::TensorProto t;
  if (!t.ParseFromString(bytes.str())) throw std::runtime_error("cannot parse " + path.string());
  return t;
}

std::vector<fs::path> numbered(const fs::path& dir, const std::string& prefix) {
  std::vector<fs::path> files;
  for (int i = 0; fs::exists(dir / (prefix + std::to_string(i) + ".pb")); ++i)
    files.push_back(dir / (prefix + std::to_string(i) + ".pb"));
  return files;
}

// The kiln dtype an ONNX output of this element type must come back as, if any.
std::optional<DType> exact_dtype(int32_t elem_type) {
  using P = ::onnx::TensorProto;
  if (elem_type == P::FLOAT) return DType::f32;
  if (elem_type == P::INT32) return DType::i32;
  if (elem_type == P::BOOL) return DType::boolean;
  return std::nullopt;
}

// How `got` differs from `want` (empty if it does not), as numpy's
// assert_allclose(rtol=1e-3, atol=1e-7) with exact dtype and shape.
std::string difference(const Tensor& got, const ::onnx::TensorProto& want, const std::string& name) {
  const std::optional<DType> dtype = exact_dtype(want.data_type());
  if (!dtype || got.dtype() != *dtype)
    return name + ": dtype " + std::string(dtype_name(got.dtype())) + ", expected ONNX element type " +
           ::onnx::TensorProto::DataType_Name(static_cast<::onnx::TensorProto::DataType>(want.data_type()));
  const kiln::onnx::Constant k = kiln::onnx::constant_from_proto(want, name);
  if (got.shape() != k.shape) return name + ": shape " + shape_str(got.shape()) + ", expected " + shape_str(k.shape);
  for (size_t i = 0; i < static_cast<size_t>(k.numel()); ++i) {
    if (*dtype == DType::f32) {
      const double g = got.f32().data()[i], w = k.reals[i];
      if (std::isnan(g) && std::isnan(w)) continue;
      if (std::isinf(w) ? g != w : !(std::abs(g - w) <= 1e-7 + 1e-3 * std::abs(w)))
        return name + "[" + std::to_string(i) + "]: " + std::to_string(g) + ", expected " + std::to_string(w);
    } else {
      const int64_t g = *dtype == DType::i32 ? got.i32().data()[i] : got.b8().data()[i];
      if (g != k.ints[i])
        return name + "[" + std::to_string(i) + "]: " + std::to_string(g) + ", expected " + std::to_string(k.ints[i]);
    }
  }
  return {};
}

Result run_test(const fs::path& dir, const ::onnx::ModelProto& model) {
  std::optional<kiln::onnx::ImportedModel> imported;
  try {
    imported = kiln::onnx::import_model((dir / "model.onnx").string());
  } catch (const Error& e) {
    return {Outcome::refused, e.what()};
  }
  kiln::onnx::ImportedModel& m = *imported;
  const fs::path data = dir / "test_data_set_0";
  std::set<std::string> initializers;
  for (const auto& t : model.graph().initializer()) initializers.insert(t.name());
  std::vector<std::string> onnx_inputs;
  for (const auto& in : model.graph().input())
    if (!initializers.count(in.name())) onnx_inputs.push_back(in.name());
  const std::vector<Value> inputs = m.graph.declarations(ValueKind::input);
  const std::vector<fs::path> input_files = numbered(data, "input_");
  if (input_files.size() != inputs.size())
    return {Outcome::differing, std::to_string(input_files.size()) + " input files for " +
                                    std::to_string(inputs.size()) + " graph inputs"};
  std::vector<std::pair<std::string, Tensor>> bindings;
  for (size_t i = 0; i < inputs.size(); ++i) {
    try {
      const std::string what = "input '" + onnx_inputs[i] + "'";
      Tensor t = kiln::onnx::constant_from_proto(read_tensor(input_files[i]), what).to_tensor(what);
      if (t.type() != m.graph.type(inputs[i]))
        return {Outcome::differing, what + " is " + std::string(dtype_name(t.dtype())) + shape_str(t.shape()) +
                                        ", the graph declares " + type_str(m.graph.type(inputs[i]))};
      bindings.emplace_back(m.graph.name_of(inputs[i]), std::move(t));
    } catch (const Error& e) {
      return {Outcome::refused, e.what()};  // a value kiln's dtypes cannot hold
    }
  }
  try {
    compiler::BackendOptions jit;
    jit.backend = "jit";
    auto exe = compiler::make_executable(m.graph, jit);
    for (auto& [name, t] : bindings) exe->bind(name, std::move(t));
    for (auto& [name, t] : m.tensors) exe->bind(name, std::move(t));
    exe->run();
    const std::vector<fs::path> output_files = numbered(data, "output_");
    const std::vector<std::string> names = exe->output_names();
    if (names.size() != output_files.size())
      return {Outcome::differing, std::to_string(names.size()) + " outputs, expected " +
                                      std::to_string(output_files.size())};
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string diff = difference(exe->output(names[i]), read_tensor(output_files[i]), names[i]);
      if (!diff.empty()) return {Outcome::differing, diff};
    }
  } catch (const Error& e) {
    return {Outcome::differing, std::string("run failed: ") + e.what()};
  }
  return {Outcome::passed, {}};
}

bool claimed(const ::onnx::ModelProto& model) {
  for (const auto& n : model.graph().node())
    if (!(n.domain().empty() || n.domain() == "ai.onnx") || !kiln::onnx::find_converter(n.op_type())) return false;
  return true;
}

struct Counts {
  int passed = 0, refused = 0, differing = 0;
  void add(Outcome o) { ++(o == Outcome::passed ? passed : o == Outcome::refused ? refused : differing); }
  int total() const { return passed + refused + differing; }
};

std::string table(const std::map<std::string, Counts>& by_op, const Counts& claimed_tests, const Counts& all) {
  std::ostringstream out;
  out << "| ONNX op | tests | passed | refused | differing |\n|---|---:|---:|---:|---:|\n";
  for (const auto& [op, c] : by_op)
    out << "| " << op << " | " << c.total() << " | " << c.passed << " | " << c.refused << " | " << c.differing << " |\n";
  out << "| **tests of claimed ops** | " << claimed_tests.total() << " | " << claimed_tests.passed << " | "
      << claimed_tests.refused << " | " << claimed_tests.differing << " |\n";
  out << "| **all node tests** | " << all.total() << " | " << all.passed << " | " << all.refused << " | "
      << all.differing << " |\n";
  return out.str();
}

}  // namespace

TEST_CASE("ONNX's backend node tests: each one of the ops kiln claims passes or is refused, none differs") {
  TempDir generated;
  fs::path root;
  if (const char* given = std::getenv("KILN_ONNX_NODE_DATA")) {
    root = given;
  } else {
    const std::string script = KILN_SOURCE_DIR "/tests/onnx/generate_node_tests.py";
    const std::string cmd = "/usr/bin/python3 " + script + " " + generated.file("data") + " > /dev/null";
    REQUIRE_MESSAGE(std::system(cmd.c_str()) == 0, "generating the node tests failed: " << cmd);
    root = generated.path() / "data";
  }
  std::vector<fs::path> tests;
  for (const auto& e : fs::directory_iterator(root / "node")) tests.push_back(e.path());
  std::sort(tests.begin(), tests.end());
  REQUIRE(tests.size() > 500);

  std::map<std::string, Counts> by_op;
  Counts claimed_tests, all;
  std::string refusals, differences;
  for (const fs::path& dir : tests) {
    const ::onnx::ModelProto model = kiln::onnx::read_model_file((dir / "model.onnx").string());
    const bool ours = claimed(model);
    const Result r = ours ? run_test(dir, model) : Result{Outcome::refused, "an op kiln does not claim"};
    if (!ours) {  // refused at import all the same, naming the op
      try {
        kiln::onnx::import_model((dir / "model.onnx").string());
        CHECK_MESSAGE(false, dir.filename().string() << " imports though one of its ops is not claimed");
      } catch (const Error&) {
      }
    }
    all.add(r.outcome);
    if (!ours) continue;
    claimed_tests.add(r.outcome);
    std::set<std::string> ops;
    for (const auto& n : model.graph().node()) ops.insert(n.op_type());
    for (const std::string& op : ops) by_op[op].add(r.outcome);
    const std::string line = "\n  " + dir.filename().string() + ": " + r.detail;
    if (r.outcome == Outcome::refused) {
      refusals += line;
      // A refusal names what kiln lacks: the node (and its op), or the input or output (and its dtype).
      const bool names_it = r.detail.find("node ") != std::string::npos ||
                            r.detail.find("input '") != std::string::npos ||
                            r.detail.find("output '") != std::string::npos;
      CHECK_MESSAGE(names_it, dir.filename().string() << " is refused naming neither node, input nor output: "
                                                       << r.detail);
    }
    if (r.outcome == Outcome::differing) differences += line;
  }
  MESSAGE("refused tests of claimed ops:" << refusals);
  CHECK_MESSAGE(differences.empty(), "tests that differ:" << differences);
  CHECK(claimed_tests.total() > 250);
  if (const char* path = std::getenv("KILN_ONNX_NODE_TABLE")) std::ofstream(path) << table(by_op, claimed_tests, all);
}
