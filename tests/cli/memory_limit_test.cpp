// kiln under the limits a process often has: a 4 GB address space (ulimit -v
// 4000000), few threads (ulimit -u), and sizes from outside that no limit allows.
// Every command works or refuses naming the value, its bytes and the limit:
// never std::bad_alloc, never a signal.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include "address_space_limit.h"
#include "cli/run_kiln.h"
#include "engine/npy.h"
#include "engine/safetensors.h"
#include "models/train/trainer_state.h"
#include "text_and_files.h"

using namespace kiln;

namespace {

const std::string kUlimit = "ulimit -v 4000000; ";

// kiln under a 4 GB address-space limit.
KilnResult run_limited(const std::vector<std::string>& args) { return run_kiln(args, kUlimit); }

// A refusal naming `what` and the address-space limit, with exit 1 and nothing else gone wrong.
void check_refused_at_limit(const KilnResult& r, const std::string& what) {
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.err.find(what) != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find("address-space limit of 3.8 GiB (ulimit -v 4000000)") != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find("bad_alloc") == std::string::npos, r.err);
}

std::vector<std::string> mlp_inputs() {
  const std::string dir = source_path("examples/inputs/mlp/");
  return {"--input", "x=" + dir + "x.npy", "--input", "labels=" + dir + "labels.npy"};
}

}  // namespace

TEST_CASE("under ulimit -v 4000000, kiln run refuses huge params and constants naming the value and the limit") {
  if (!kAddressSpaceLimitWorks) return;  // address_space_limit.h: not under ASan
  TempDir dir;
  write_file(dir.file("param.kir"),
             "graph @g {\n  param %w : f32[2000000000]\n  %s = sum(%w) {axes=[0]} : f32[]\n  output %s\n}\n");
  write_file(dir.file("fill.kir"),
             "graph @g {\n  %f = fill() {shape=[4000000000], value=1.0} : f32[4000000000]\n  output %f\n}\n");
  write_file(dir.file("iota.kir"),
             "graph @g {\n  %i = iota() {shape=[100000,30000], axis=1} : i32[100000,30000]\n  output %i\n}\n");
  for (const char* backend : {"interp", "jit"}) {
    CAPTURE(backend);
    const auto run = [&](const std::string& kir) {
      return run_limited({"run", dir.file(kir), "--backend", backend, "--no-cache", "-o", dir.file("out")});
    };
    check_refused_at_limit(run("param.kir"), "param %w: f32[2000000000] needs 8000000000 bytes (7.5 GiB), more than");
    check_refused_at_limit(run("fill.kir"), "f32[4000000000] needs 16000000000 bytes (14.9 GiB), more than");
    check_refused_at_limit(run("iota.kir"), "i32[100000,30000] needs 12000000000 bytes (11.2 GiB), more than");
  }
  // The interpreter names the node, the JIT the output.
  const KilnResult interp = run_limited({"run", dir.file("iota.kir"), "--backend", "interp", "-o", dir.file("out")});
  CHECK_MESSAGE(interp.err.find("%i (op 'iota' at " + dir.file("iota.kir") + ":2:8): i32[") != std::string::npos,
                interp.err);
  const KilnResult jit = run_limited({"run", dir.file("fill.kir"), "--no-cache", "-o", dir.file("out")});
  CHECK_MESSAGE(jit.err.find("output %f: f32[4000000000]") != std::string::npos, jit.err);
  CHECK_FALSE(std::filesystem::exists(dir.file("out")));
}

TEST_CASE("under ulimit -v 4000000, small runs of run, train, eval and import work, the JIT's included") {
  if (!kAddressSpaceLimitWorks) return;
  TempDir dir;
  std::vector<std::string> run = {"run", source_path("examples/mlp.kir"), "-o", dir.file("out")};
  for (const std::string& a : mlp_inputs()) run.push_back(a);
  const KilnResult mlp = run_limited(run);
  CHECK_MESSAGE(mlp.status == 0, mlp.err);
  CHECK(std::filesystem::exists(dir.file("out/loss.npy")));

  const std::string checkpoint = dir.file("copy");
  const KilnResult train =
      run_limited({"train", "--task", "copy", "--steps", "3", "--checkpoint", checkpoint, "--d-model", "32", "--heads",
                   "2", "--d-ff", "64", "--layers", "1", "--eval-sentences", "4"});
  CHECK_MESSAGE(train.status == 0, train.err);
  const KilnResult eval =
      run_limited({"eval", "--checkpoint", checkpoint, "--split", "dev", "--limit", "4", "--beam", "1"});
  CHECK_MESSAGE(eval.status == 0, eval.err);
  CHECK(eval.out.find("exact match") != std::string::npos);

  // tiny_linear.onnx: x f32[2,3] -> Relu(x @ W + B), W f32[3,4] and B f32[4] its initializers (python3-onnx).
  const KilnResult import =
      run_limited({"import", source_path("tests/cli/tiny_linear.onnx"), "-o", dir.file("linear.kir")});
  CHECK_MESSAGE(import.status == 0, import.err);
  save_npy(dir.file("x.npy"), Tensor(Tensor::F32{{1.0f, 2.0f, 3.0f}, {-1.0f, 0.0f, 1.0f}}));
  const KilnResult linear = run_limited({"run", dir.file("linear.kir"), "--load", dir.file("linear.params"), "--input",
                                         "x=" + dir.file("x.npy"), "-o", dir.file("linear")});
  CHECK_MESSAGE(linear.status == 0, linear.err);
  CHECK(load_npy(dir.file("linear/y.npy")).shape() == Shape{2, 4});
}

TEST_CASE("the interpreter reads a fusion's operands in place, and what fails beyond the checks is out of memory") {
  if (!kAddressSpaceLimitWorks) return;
  TempDir dir;
  // 600 MB of param under a 1 GB limit: a copy of it for the fusion body does not fit.
  write_file(dir.file("fusion.kir"), R"(graph @g {
  param %w : f32[150000000]
  %y = fusion(%w) {hero=0, kind="input"} : f32[1] graph @f {
    input %p0 : f32[150000000]
    %s = sum(%p0) {axes=[0], keepdims=true} : f32[1]
    output %s
  }
  output %y
}
)");
  const std::string limit = "ulimit -v 1000000; ";
  const KilnResult fusion =
      run_kiln({"run", dir.file("fusion.kir"), "--backend", "interp", "-o", dir.file("out")}, limit);
  CHECK_MESSAGE(fusion.status == 0, fusion.err);

  // Param and result are checked and fit; softmax's temporaries are not and do not.
  write_file(dir.file("softmax.kir"),
             "graph @g {\n  param %x : f32[75000000]\n  %y = softmax(%x) : f32[75000000]\n"
             "  %s = sum(%y) {axes=[0]} : f32[]\n  output %s\n}\n");
  const KilnResult softmax =
      run_kiln({"run", dir.file("softmax.kir"), "--backend", "interp", "-o", dir.file("out")}, limit);
  CHECK(softmax.status == 1);
  CHECK_MESSAGE(softmax.err.find("kiln: error: out of memory: an allocation failed; the memory limit is the ") !=
                    std::string::npos,
                softmax.err);
  CHECK(softmax.err.find("address-space limit of 1.0 GiB (ulimit -v 1000000)") != std::string::npos);
  CHECK(softmax.err.find("bad_alloc") == std::string::npos);
}

TEST_CASE("a checkpoint whose JSON nests without end is refused before it is parsed, under a 1 GB limit too") {
  TempDir dir;
  const std::string deep = std::string(20'000'000, '[');  // parsed, 1.5 GB
  save_safetensors(dir.file("checkpoint.safetensors"), {},
                   {{"format", "kiln-checkpoint-1"}, {"task", "copy"}, {"config", deep}, {"trainer", "{}"}});
  const KilnResult r = run_kiln({"eval", "--checkpoint", dir.path().string(), "--split", "dev", "--limit", "1"},
                                kAddressSpaceLimitWorks ? "ulimit -v 1000000; " : "");
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.err.find("bad model config: Transformer config: JSON nests deeper than a flat object, at byte 2") !=
                    std::string::npos,
                r.err);
  // The trainer state, read on --resume, is checked the same way.
  CHECK_THROWS_WITH_AS(models::trainer_state_from_json("{\"step\":" + deep),
                       "checkpoint trainer state: JSON nests deeper than its 3 levels, at byte 11", Error);
}

TEST_CASE("kiln train --batch-tokens beyond the memory limit is refused before a batch is made") {
  TempDir dir;
  // Under the 4 GB limit too, where building the batch first would end in bad_alloc (it took 4.5 GB).
  for (const std::string& prefix : {std::string(), kAddressSpaceLimitWorks ? kUlimit : std::string()}) {
    const KilnResult r = run_kiln({"train", "--task", "copy", "--steps", "1", "--checkpoint", dir.file("run"),
                                   "--backend", "interp", "--batch-tokens", "1000000000000"},
                                  prefix);
    CHECK(r.status == 1);
    CHECK_MESSAGE(r.err.find("a batch of 1000000000000 tokens (") != std::string::npos, r.err);
    CHECK_MESSAGE(r.err.find(" rows of 10 source and 9 target positions) needs ") != std::string::npos, r.err);
    CHECK(r.err.find("bad_alloc") == std::string::npos);
  }
}

TEST_CASE("--threads beyond the limit is a flag error naming it, and threads the system refuses an error") {
  TempDir dir;
  std::vector<std::string> run = {"run", source_path("examples/mlp.kir"), "-o", dir.file("out")};
  for (const std::string& a : mlp_inputs()) run.push_back(a);
  const auto with = [&](std::vector<std::string> args, const std::string& threads) {
    args.insert(args.end(), {"--threads", threads});
    return args;
  };
  KilnResult r = run_kiln(with(run, "1000"));
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.err.find("--threads: wants an integer from 1 to ") != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find(", got 1000 (kiln's parallel loops run on at most 256 threads") != std::string::npos, r.err);

  r = run_kiln(with(run, "0"));
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.err.find("--threads: wants an integer from 1 to ") != std::string::npos, r.err);
  CHECK_MESSAGE(r.err.find(", got 0\n") != std::string::npos, r.err);  // the limit's reason is for counts over it

  r = run_kiln(with(run, "30"), "prlimit --nproc=20 ");  // util-linux; sh's ulimit has no -u
  CHECK(r.status == 2);
  CHECK_MESSAGE(r.err.find("--threads: wants an integer from 1 to 20, got 30 (the limit on this user's processes and "
                           "threads, ulimit -u 20)") != std::string::npos,
                r.err);

  if (!kAddressSpaceLimitWorks) return;
  // 100 stacks of 64 MB do not fit in 4 GB of address space: the pool starts what it can and says so.
  r = run_kiln(with(run, "100"), kUlimit + "ulimit -s 65536; ");
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.err.find("threads: 100 asked for, the system started only ") != std::string::npos, r.err);
  CHECK_MESSAGE(
      r.err.find("(each thread counts against ulimit -u, and its stack against the address space, ulimit -v)") !=
          std::string::npos,
      r.err);
  // Stacks of 3.7 GB: no second thread fits. Asked for none, the JIT compiles on
  // the calling thread and the pool runs there alone.
  run.push_back("--no-cache");
  r = run_kiln(run, kUlimit + "ulimit -s 3900000; ");
  CHECK_MESSAGE(r.status == 0, r.err);
}

TEST_CASE("kiln check refuses an init that kiln run refuses, at its place") {
  TempDir dir;
  write_file(dir.file("evil.kir"), "graph @g {\n  param %w : f32[4] {init=\"evil\"}\n  output %w\n}\n");
  for (const std::vector<std::string>& args : {std::vector<std::string>{"check", dir.file("evil.kir")},
                                               {"run", dir.file("evil.kir"), "-o", dir.file("out")}}) {
    const KilnResult r = run_kiln(args);
    CHECK(r.status == 1);
    CHECK_MESSAGE(
        r.err.find(dir.file("evil.kir") + ":2:27: error: param %w: unknown init \"evil\"") != std::string::npos, r.err);
  }
}
