// Profiling a JitExecutable (compiler/run_profile.h, compiler/profile.h): call
// spans, per-thread chunks, the kernel table's work figures and the Chrome trace.
#include <doctest/doctest.h>

#include <memory>
#include <nlohmann/json.hpp>
#include <set>

#include "compiler/jit_executable.h"
#include "compiler/profile.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/ir/builder.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"

using namespace kiln;
using namespace kiln::compiler;

namespace {

// relu(x @ x) over f32[256, 256]: two kernels without fusion, one with (an epilogue).
std::unique_ptr<JitExecutable> matmul_relu(bool fuse) {
  Graph g("timed");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {256, 256}});
  b.output(ops::relu(b, ops::matmul(b, x, x)));
  JitOptions options;
  if (!fuse) options.pipeline.passes.passes = {"cse"};
  auto jit = std::make_unique<JitExecutable>(std::move(g), options);
  jit->bind("x", Tensor::zeros({DType::f32, {256, 256}}));
  return jit;
}

}  // namespace

TEST_CASE("a profiled run records every kernel call in order, within the run's time, and each chunk by thread") {
  const auto owner = matmul_relu(false);
  JitExecutable& jit = *owner;
  const size_t calls = jit.compiled().program.calls.size();
  REQUIRE(calls == 2);
  kiln_set_num_threads(2);
  jit.run();
  CHECK(jit.run_profile().runs == 0);  // not profiled
  jit.profile(true);
  const int64_t before = trace_clock_ns();
  for (int i = 0; i < 3; ++i) jit.run();
  const int64_t after = trace_clock_ns();
  const RunProfile& r = jit.run_profile();
  CHECK(r.runs == 3);
  REQUIRE(r.calls.size() == 3 * calls);
  for (size_t i = 0; i < r.calls.size(); ++i) {
    CHECK(r.calls[i].call == i % calls);
    CHECK(r.calls[i].begin_ns >= before);
    CHECK(r.calls[i].begin_ns <= r.calls[i].end_ns);
    CHECK(r.calls[i].end_ns <= after);
    if (i > 0) CHECK(r.calls[i - 1].end_ns <= r.calls[i].begin_ns);
  }
  // The matmul's rows split in two chunks per run, each inside a call, run by
  // the caller (thread 0) or worker 1 (whichever takes it first: a busy machine
  // may leave both to the caller).
  std::set<int> threads;
  for (const ChunkSpan& c : r.chunks) {
    threads.insert(c.thread);
    CHECK(c.begin_ns >= r.calls.front().begin_ns);
    CHECK(c.end_ns <= r.calls.back().end_ns);
  }
  CHECK(r.chunks.size() >= 3 * 2);
  CHECK(threads.count(0) == 1);
  CHECK(threads.size() <= 2);

  jit.profile(true);  // on again: a fresh record
  CHECK(jit.run_profile().calls.empty());
  jit.profile(false);
  jit.run();
  CHECK(jit.run_profile().calls.empty());
  kiln_set_num_threads(0);
}

TEST_CASE("the kernel table counts each kernel's calls, time, flops and bytes per run") {
  const auto owner = matmul_relu(false);
  JitExecutable& jit = *owner;
  jit.profile(true);
  for (int i = 0; i < 2; ++i) jit.run();
  const Program& p = jit.compiled().program;
  const std::vector<KernelProfileRow> rows = kernel_profile(p, jit.run_profile());
  REQUIRE(rows.size() == 2);
  CHECK(rows[0].ms >= rows[1].ms);
  double matmul_flops = 0, relu_flops = 0;
  for (const KernelProfileRow& row : rows) {
    CHECK(row.calls == 1);
    CHECK(row.ms > 0);
    CHECK(row.bytes == 3 * 256 * 256 * 4.0 - (row.ops == "relu" ? 256 * 256 * 4.0 : 0));
    (row.ops == "matmul" ? matmul_flops : relu_flops) = row.flops;
  }
  CHECK(matmul_flops == 2.0 * 256 * 256 * 256);
  CHECK(relu_flops == 256.0 * 256);

  const auto fused_owner = matmul_relu(true);
  JitExecutable& fused = *fused_owner;
  fused.profile(true);
  fused.run();
  const std::vector<KernelProfileRow> one = kernel_profile(fused.compiled().program, fused.run_profile());
  REQUIRE(one.size() == 1);
  CHECK(one[0].ops == "matmul, relu");
  CHECK(one[0].flops == 2.0 * 256 * 256 * 256 + 256.0 * 256);
}

TEST_CASE("the Chrome trace has a track per thread, the kernel calls on the caller's, in microseconds") {
  const auto owner = matmul_relu(false);
  JitExecutable& jit = *owner;
  kiln_set_num_threads(2);
  jit.profile(true);
  jit.run();
  kiln_set_num_threads(0);
  const nlohmann::json trace = nlohmann::json::parse(chrome_trace(jit.compiled().program, jit.run_profile()));
  std::set<std::string> tracks;
  int call_events = 0, chunk_events = 0;
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") == "M") {
      tracks.insert(e.at("args").at("name").get<std::string>());
      continue;
    }
    CHECK(e.at("ph") == "X");
    CHECK(e.at("ts").get<double>() >= 0);
    CHECK(e.at("dur").get<double>() >= 0);
    if (e.contains("args")) {  // a kernel call, on the caller's track
      ++call_events;
      CHECK(e.at("tid") == 0);
      CHECK(e.at("args").at("flops").get<double>() > 0);
    } else {
      ++chunk_events;
    }
  }
  CHECK(tracks.count("thread 0 (the caller)") == 1);
  CHECK(tracks.size() <= 2);  // and "worker 1" if it took a chunk
  CHECK(call_events == 2);
  CHECK(chunk_events >= 2);
}
