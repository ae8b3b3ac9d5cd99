// Two executables at once: compiled and run from two threads at the same time
// (sharing the thread pool, the kernel cache and LLVM), they give the same bits
// as each run alone. One executable shared by two threads, each holding its
// lock() from bind to reading the outputs (as the Python module does), gives
// each thread its own results; a run that overlaps another is an error. CI also
// runs this suite built with ThreadSanitizer (KILN_TSAN=ON), which reports any
// data race it sees on the way.
#include <doctest/doctest.h>

#include <atomic>
#include <cstring>
#include <thread>

#include "cli/temp_dir.h"
#include "compiler/backend.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/ir/builder.h"
#include "ir/random_graph.h"
#include "jit/differential.h"
#include "ops/elementwise.h"
#include "ops/matmul.h"
#include "ops/normalization.h"
#include "ops/reduction.h"

using namespace kiln;
using namespace kiln::test;

namespace {

// A graph with parallel loops of every kind: a GEMM, a fused row kernel, a
// full reduction; sizes make each loop span several tasks.
Graph work_graph(const std::string& name, int64_t n) {
  Graph g(name);
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {n, 96}});
  const Value w = b.param("w", {DType::f32, {96, 80}});
  const Value h = ops::tanh(b, ops::matmul(b, x, w));
  b.output(ops::softmax(b, ops::mul(b, h, h), -1));
  b.output(ops::sum(b, ops::exp(b, h)));
  return g;
}

struct Job {
  Graph graph;
  std::map<std::string, Tensor> bindings;
  compiler::BackendOptions options;
};

std::vector<Tensor> run_job(const Job& job) {
  auto exe = compiler::make_executable(job.graph, job.options);
  for (const auto& [name, t] : job.bindings) exe->bind(name, t);
  std::vector<Tensor> outs;
  for (int step = 0; step < 3; ++step) exe->run();
  for (const std::string& name : exe->output_names()) outs.push_back(exe->output(name));
  return outs;
}

bool same_bits(const std::vector<Tensor>& a, const std::vector<Tensor>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(a[i].type() == b[i].type()) ||
        std::memcmp(a[i].data(), b[i].data(), static_cast<size_t>(a[i].numel()) * 4) != 0)
      return false;
  return true;
}

}  // namespace

TEST_CASE("two executables compiled and run at once from two threads give the same results as alone") {
  TempDir cache;
  kiln_set_num_threads(2);
  std::vector<Job> jobs;
  for (int i = 0; i < 2; ++i) {
    std::string name = "g";  // appended: GCC 12 warns falsely on "g" + std::string
    name += std::to_string(i);
    Job job{work_graph(name, 257 + 64 * i), {}, {}};
    Rng rng(static_cast<uint64_t>(40 + i));
    job.bindings = random_bindings(job.graph, rng, Values::moderate);
    job.options.kernels.cache_dir = cache.file("kernels");  // one on-disk cache, written by both
    jobs.push_back(std::move(job));
  }
  std::vector<std::vector<Tensor>> alone;
  for (const Job& job : jobs) alone.push_back(run_job(job));

  for (int round = 0; round < 3; ++round) {  // the first round compiles; later ones load the cache
    INFO("round ", round);
    if (round == 0) std::filesystem::remove_all(cache.file("kernels"));
    std::vector<std::vector<Tensor>> together(2);
    std::thread other([&] { together[1] = run_job(jobs[1]); });
    together[0] = run_job(jobs[0]);
    other.join();
    CHECK(same_bits(together[0], alone[0]));
    CHECK(same_bits(together[1], alone[1]));
  }
  kiln_set_num_threads(0);
}

namespace {

// One thread's turn on a shared executable, as the Python module takes it:
// lock() held from binding its input to copying its outputs.
std::vector<Tensor> locked_run(Executable& exe, const Tensor& x) {
  const auto hold = exe.lock();
  exe.bind("x", x);
  exe.run();
  std::vector<Tensor> outs;
  for (const std::string& name : exe.output_names()) outs.push_back(exe.take_output(name));
  return outs;
}

// An executable whose run waits until released: a run caught in progress.
class HeldExecutable : public Executable {
 public:
  using Executable::Executable;
  std::atomic<bool> started{false}, release{false};

 protected:
  void execute() override {
    started = true;
    while (!release) std::this_thread::yield();
  }
};

}  // namespace

TEST_CASE("threads sharing one executable under its lock each get their own results") {
  kiln_set_num_threads(2);
  const Graph graph = work_graph("shared", 129);
  for (const char* backend : {"interp", "jit"}) {
    INFO(backend);
    compiler::BackendOptions options;
    options.backend = backend;
    options.kernels.cache = false;
    auto exe = compiler::make_executable(graph, options);
    Rng rng(7);
    const auto params = random_bindings(graph, rng, Values::moderate);
    exe->bind("w", params.at("w"));
    std::vector<Tensor> inputs;
    std::vector<std::vector<Tensor>> alone;
    for (int i = 0; i < 2; ++i) {
      inputs.push_back(random_bindings(graph, rng, Values::moderate).at("x"));
      alone.push_back(locked_run(*exe, inputs.back()));
    }
    std::vector<int> mismatches(2, 0);
    const auto hammer = [&](int i) {
      for (int r = 0; r < 20; ++r)
        if (!same_bits(locked_run(*exe, inputs[i]), alone[i])) ++mismatches[i];
    };
    std::thread other(hammer, 1);
    hammer(0);
    other.join();
    CHECK(mismatches == std::vector<int>{0, 0});
  }
  kiln_set_num_threads(0);
}

TEST_CASE("a run that starts while another is in progress is an error, and the first finishes") {
  Graph g("held");
  Builder(g).output(Builder(g).input("x", {DType::f32, {2}}));
  HeldExecutable exe(g);
  exe.bind("x", Tensor::zeros({DType::f32, {2}}));
  std::thread first([&] { exe.run(); });
  while (!exe.started) std::this_thread::yield();
  CHECK_THROWS_WITH_AS(exe.run(), doctest::Contains("another run of this executable is in progress"), Error);
  exe.release = true;
  first.join();
  exe.started = false;
  exe.run();  // free again
  CHECK(exe.started);
}
