// `kiln import`: writes the .kir and its params for kiln run --load; on bad input
// exits non-zero with a message naming the file and node, and writes nothing.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "cli/run_kiln.h"
#include "engine/npy.h"
#include "onnx/model_builder.h"
#include "side_files.h"

using kiln::test::ModelBuilder;
namespace fs = std::filesystem;

namespace {

void write(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

ModelBuilder linear_model() {
  ModelBuilder m;
  m.input("x", {std::string("batch"), int64_t{2}})
      .output("y")
      .floats("w", {2, 3}, {1, 2, 3, 4, 5, 6})
      .floats("b", {3}, {0.5f, 0.5f, 0.5f})
      .node("MatMul", "mm", {"x", "w"}, {"xw"})
      .node("Add", "bias", {"xw", "b"}, {"y"});
  return m;
}

// Nothing at OUT, no params directory, no temporaries beside OUT.
void check_nothing_written(const TempDir& dir) {
  CHECK_FALSE(fs::exists(dir.file("out.kir")));
  CHECK_FALSE(fs::exists(dir.file("out.params")));
  CHECK(side_files(dir.file("out.kir")).empty());
}

}  // namespace

TEST_CASE("kiln import writes a graph and params that kiln run --load runs") {
  TempDir dir;
  write(dir.file("linear.onnx"), linear_model().bytes());
  const KilnResult r = run_kiln({"import", dir.file("linear.onnx"), "-o", dir.file("out.kir"), "--dim", "batch=1"});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("input %x : f32[1,2]") != std::string::npos);
  CHECK(fs::exists(dir.file("out.params/w.npy")));
  CHECK(fs::exists(dir.file("out.params/b.npy")));
  const std::string x_npy = dir.file("x.npy");
  kiln::save_npy(x_npy, kiln::Tensor(kiln::Tensor::F32{{1.0f, -1.0f}}));
  const KilnResult run = run_kiln({"run", dir.file("out.kir"), "--load", dir.file("out.params"), "--input",
                                   "x=" + x_npy, "--output-dir", dir.file("run"), "--backend", "interp"});
  REQUIRE_MESSAGE(run.status == 0, run.err);
  // y = [1, -1] @ [[1, 2, 3], [4, 5, 6]] + 0.5
  const kiln::Tensor y = kiln::load_npy(dir.file("run/y.npy"));
  CHECK(y.shape() == kiln::Shape{1, 3});
  CHECK(y.f32()(0, 0) == -2.5f);
  CHECK(y.f32()(0, 2) == -2.5f);
}

TEST_CASE("kiln import of a truncated, non-ONNX or missing file exits 1 and writes nothing") {
  TempDir dir;
  const std::string bytes = linear_model().bytes();
  write(dir.file("cut.onnx"), bytes.substr(0, bytes.size() / 2));
  write(dir.file("text.onnx"), "not a model at all\n");
  for (const std::string name : {"cut.onnx", "text.onnx", "missing.onnx"}) {
    const KilnResult r = run_kiln({"import", dir.file(name), "-o", dir.file("out.kir"), "--dim", "batch=1"});
    CHECK(r.status == 1);
    CHECK_MESSAGE(r.err.find(dir.file(name)) != std::string::npos, r.err);
    check_nothing_written(dir);
  }
}

TEST_CASE("kiln import lists every op it cannot import, and a dim without value, then writes nothing") {
  TempDir dir;
  ModelBuilder m = linear_model();
  m.node("Conv", "conv1", {"y"}, {"c"}).node("Conv", "conv2", {"c"}, {"d"});
  write(dir.file("conv.onnx"), m.bytes());
  const KilnResult ops = run_kiln({"import", dir.file("conv.onnx"), "-o", dir.file("out.kir")});
  CHECK(ops.status == 1);
  CHECK_MESSAGE(ops.err.find("Conv: nodes 'conv1', 'conv2'") != std::string::npos, ops.err);
  check_nothing_written(dir);

  write(dir.file("linear.onnx"), linear_model().bytes());
  const KilnResult dim = run_kiln({"import", dir.file("linear.onnx"), "-o", dir.file("out.kir")});
  CHECK(dim.status == 1);
  CHECK_MESSAGE(dim.err.find("input 'x' dim 0 ('batch') has no value") != std::string::npos, dim.err);
  check_nothing_written(dir);

  const KilnResult flag =
      run_kiln({"import", dir.file("linear.onnx"), "-o", dir.file("out.kir"), "--dim", "batch=two"});
  CHECK(flag.status == 2);
  CHECK_MESSAGE(flag.err.find("'two' is not a dim") != std::string::npos, flag.err);
  check_nothing_written(dir);
}

TEST_CASE("kiln run of an imported graph names every param it lacks: without --load, or with one file missing") {
  TempDir dir;
  write(dir.file("linear.onnx"), linear_model().bytes());
  REQUIRE(run_kiln({"import", dir.file("linear.onnx"), "-o", dir.file("out.kir"), "--dim", "batch=1"}).status == 0);
  const std::string x_npy = dir.file("x.npy");
  kiln::save_npy(x_npy, kiln::Tensor(kiln::Tensor::F32{{1.0f, -1.0f}}));
  const std::vector<std::string> run = {"run", dir.file("out.kir"), "--input", "x=" + x_npy, "--output-dir",
                                        dir.file("run"), "--backend", "interp"};

  const KilnResult bare = run_kiln(run);
  CHECK(bare.status == 1);
  CHECK_MESSAGE(bare.err.find("param %w, param %b: init \"load\"") != std::string::npos, bare.err);
  CHECK_MESSAGE(bare.err.find("--load DIR") != std::string::npos, bare.err);
  CHECK_FALSE(fs::exists(dir.file("run")));

  fs::remove(dir.file("out.params/b.npy"));
  std::vector<std::string> partial = run;
  partial.insert(partial.end(), {"--load", dir.file("out.params")});
  const KilnResult lacking = run_kiln(partial);
  CHECK(lacking.status == 1);
  CHECK_MESSAGE(lacking.err.find("kiln: error: param %b: init \"load\"") != std::string::npos, lacking.err);
  CHECK_FALSE(fs::exists(dir.file("run")));
}

TEST_CASE("kiln run of an imported graph refuses an imported constant stored as state without its value") {
  TempDir dir;
  ModelBuilder m;  // the indices are a constant the graph needs as a tensor: a state
  m.input("x", {int64_t{3}}).output("y").ints("order", {3}, {2, 0, 1}).node("Gather", "pick", {"x", "order"}, {"y"});
  write(dir.file("gather.onnx"), m.bytes());
  REQUIRE(run_kiln({"import", dir.file("gather.onnx"), "-o", dir.file("out.kir")}).status == 0);
  const std::string x_npy = dir.file("x.npy");
  kiln::save_npy(x_npy, kiln::Tensor(kiln::Tensor::F32{1.0f, 2.0f, 3.0f}));
  const std::vector<std::string> run = {"run", dir.file("out.kir"), "--input", "x=" + x_npy, "--output-dir",
                                        dir.file("run"), "--backend", "interp"};
  const KilnResult bare = run_kiln(run);
  CHECK(bare.status == 1);
  CHECK_MESSAGE(bare.err.find("state %order: init \"load\"") != std::string::npos, bare.err);

  std::vector<std::string> loaded = run;
  loaded.insert(loaded.end(), {"--load", dir.file("out.params")});
  const KilnResult ok = run_kiln(loaded);
  REQUIRE_MESSAGE(ok.status == 0, ok.err);
  CHECK(kiln::load_npy(dir.file("run/y.npy")).f32() == kiln::Tensor::F32{3.0f, 1.0f, 2.0f});
}

TEST_CASE("kiln import refuses to write over the model it reads, by any name") {
  TempDir dir;
  const std::string model = dir.file("m.onnx"), bytes = linear_model().bytes();
  write(model, bytes);
  fs::create_hard_link(model, dir.file("link.kir"));
  for (const std::string& out : {model, dir.file("link.kir"), dir.file("./m.onnx")}) {
    const KilnResult r = run_kiln({"import", model, "-o", out, "--dim", "batch=1"});
    CHECK(r.status == 1);
    CHECK_MESSAGE(r.err.find("-o " + out + " is the same file as MODEL " + model + ", which kiln reads") != std::string::npos,
                  r.err);
    std::ifstream in(model, std::ios::binary);
    CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == bytes);
  }
  fs::create_directory(dir.file("p"));
  fs::create_symlink(model, dir.file("p/w.npy"));
  const KilnResult param =
      run_kiln({"import", model, "-o", dir.file("out.kir"), "--params", dir.file("p"), "--dim", "batch=1"});
  CHECK(param.status == 1);
  CHECK_MESSAGE(param.err.find("--params " + dir.file("p/w.npy") + " is the same file as MODEL " + model) !=
                    std::string::npos,
                param.err);
  CHECK_FALSE(fs::exists(dir.file("out.kir")));
}

TEST_CASE("kiln import whose write fails leaves no params directory behind") {
  TempDir dir;
  write(dir.file("linear.onnx"), linear_model().bytes());
  fs::create_directory(dir.file("out.kir"));  // a directory where the graph goes: its rename fails
  const KilnResult r = run_kiln({"import", dir.file("linear.onnx"), "-o", dir.file("out.kir"), "--params",
                                 dir.file("new/params"), "--dim", "batch=1"});
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.err.find(dir.file("out.kir")) != std::string::npos, r.err);
  CHECK_FALSE(fs::exists(dir.file("new")));
}

TEST_CASE("kiln import of /dev/zero is refused at once, without reading it") {
  TempDir dir;
  const KilnResult r = run_kiln({"import", "/dev/zero", "-o", dir.file("out.kir")});
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.err.find("/dev/zero: a character device, not a model file") != std::string::npos, r.err);
  check_nothing_written(dir);
}
