// `kiln bench`: one-op graphs at Transformer-like sizes (tokens = 8192, d_model =
// 512, 8 heads of 128 x 128 attention scores, a 32000-row embedding, an 8000-word
// vocabulary), each run by the interpreter and the JIT on the same random inputs.
// Times are per Executable::run(), so they include binding checks and the copy of
// the outputs that both backends make; the JIT's compile time is reported apart.
#include "tools/cmd_bench.h"

#include "tools/bench_gemm.h"
#include "tools/bench_peak.h"
#include "tools/bench_timing.h"
#include "tools/flag_checks.h"
#include "tools/pass_flags.h"
#include "tools/path_checks.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <memory>

#include "compiler/jit_executable.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/normalization.h"
#include "ops/reduction.h"
#include "ops/shape_ops.h"

namespace kiln::cli {

CLI::App* add_bench_command(CLI::App& app, BenchOptions& opts) {
  auto* cmd = app.add_subcommand("bench", "Time the JIT against the interpreter per op, and the JIT's matmul GFLOP/s");
  cmd->add_option("--threads", opts.threads, "threads of the JIT's parallel loops (0: all cores)")
      ->check(thread_count(0))
      ->capture_default_str();
  cmd->add_option("--repeats", opts.repeats, "timed runs per op and backend, after one warm-up run")
      ->check(in_range(opts.repeats, 3, 1000))
      ->capture_default_str();
  cmd->add_option("--max-ms", opts.max_ms,
                  "stop repeating a measurement after this many milliseconds (3 runs at least)")
      ->check(positive(opts.max_ms))
      ->capture_default_str();
  cmd->add_flag("--cpu-time", opts.cpu_time,
               "time by the process's CPU time, not wall time: at 1 thread, what a quiet machine would show while "
               "other processes load this one (all threads' time is summed, so not for --threads > 1)");
  auto* model = cmd->add_option("--model", opts.model, "benchmark a model's training step instead of single ops")
                    ->check(CLI::IsMember({"transformer"}));
  // The flags that only a model's step reads are refused without --model
  // ("--trace requires --model"), not silently ignored.
  cmd->add_flag("--per-kernel", opts.per_kernel,
               "--model: also time every kernel call and print the step's time by kernel kind at 1 thread and at "
               "--threads, with each kind's speed-up")
      ->needs(model);
  cmd->add_option("--config", opts.config, "--model transformer and --op matmul: the preset")
      ->check(CLI::IsMember({"tiny", "small", "base"}))
      ->capture_default_str();
  cmd->add_option("--batch", opts.batch, "--model and --op matmul: sentences per batch (default 32, base 16)")
      ->check(positive(opts.batch));
  cmd->add_option("--src-len", opts.src_len, "--model: source length")->check(positive(opts.src_len))->capture_default_str()->needs(model);
  cmd->add_option("--tgt-len", opts.tgt_len, "--model: target length")->check(positive(opts.tgt_len))->capture_default_str()->needs(model);
  cmd->add_option("--vocab", opts.vocab, "--model: vocabulary size")->check(in_range(opts.vocab, 2, 1 << 24))->capture_default_str()->needs(model);
  cmd->add_flag("--unfused-loss", opts.unfused_loss,
                "--model: the output projection's matmul, then cross_entropy, instead of linear_cross_entropy "
                "(which never stores the [tokens, vocab] logits)")
      ->needs(model);
  cmd->add_option("--compile-only", opts.compile_only_cache,
                  "--model: only compile the training step with this kernel cache directory and print the seconds "
                  "(how the benchmark measures a warm cache in a fresh process)")
      ->needs(model);
  cmd->add_flag("--peak", opts.peak,
                "measure this machine's f32 FMA peak at 1 thread and at --threads; with --model, also report the "
                "training step's share of it");
  add_precision_flag(cmd, opts.precision);
  cmd->add_option("--target-cpu", opts.target_cpu,
                  "kiln's code for this CPU instead of the host's, e.g. znver3 or haswell on an AVX-512 host (its "
                  "AVX2 kernels); --op matmul pins OpenBLAS and oneDNN to the same vector width "
                  "(OPENBLAS_CORETYPE, ONEDNN_MAX_CPU_ISA), --peak measures FMA chains of that width");
  cmd->add_flag("--json", opts.json, "--peak, --model: print one JSON line instead of the report");
  cmd->add_option("--trace", opts.trace,
                  "--model: also time every kernel call of 5 steps and write their Chrome trace to this file (under "
                  "mpirun, rank 0's, with the allreduces on a track of their own; tools/bench/scaling_model.py reads it)")
      ->check(file_to_write())
      ->type_name("TRACE.json")
      ->needs(model);
  cmd->add_option("--op", opts.ops,
                  "benchmark only these rows (repeatable): add exp tanh sum softmax layer_norm "
                  "matmul transpose gather cross_entropy; matmul also compares the preset's products with OpenBLAS and oneDNN");
  return cmd;
}

namespace {

// One row of the table: a graph with one op, and the largest value its i32
// inputs may take (indices, labels).
struct BenchCase {
  std::string name;
  std::string shapes;
  int32_t index_bound = 1;
  std::function<void(Builder&)> build;
};

std::vector<BenchCase> bench_cases() {
  const auto f32 = [](Shape s) { return TensorType{DType::f32, std::move(s)}; };
  const auto i32 = [](Shape s) { return TensorType{DType::i32, std::move(s)}; };
  return {
      {"add", "f32[8192,512] + f32[512]", 1,
       [=](Builder& b) {
         b.output(ops::add(b, b.input("x", f32({8192, 512})), b.input("bias", f32({512}))));
       }},
      {"exp", "f32[8192,512]", 1,
       [=](Builder& b) {
         b.output(ops::exp(b, b.input("x", f32({8192, 512}))));
       }},
      {"tanh", "f32[8192,512]", 1,
       [=](Builder& b) {
         b.output(ops::tanh(b, b.input("x", f32({8192, 512}))));
       }},
      {"sum", "f32[8192,512] over axis 1", 1,
       [=](Builder& b) {
         b.output(ops::sum(b, b.input("x", f32({8192, 512})), {1}));
       }},
      {"softmax", "f32[64,128,128] over axis -1", 1,
       [=](Builder& b) {
         b.output(ops::softmax(b, b.input("x", f32({64, 128, 128}))));
       }},
      {"layer_norm", "f32[8192,512], gamma, beta", 1,
       [=](Builder& b) {
         b.output(ops::layer_norm(b, b.input("x", f32({8192, 512})), b.input("gamma", f32({512})),
                                  b.input("beta", f32({512}))));
       }},
      {"matmul", "f32[512,512] x f32[512,512]", 1,
       [=](Builder& b) {
         b.output(ops::matmul(b, b.input("x", f32({512, 512})), b.input("w", f32({512, 512}))));
       }},
      {"transpose", "f32[2048,2048] perm [1,0]", 1,
       [=](Builder& b) {
         b.output(ops::transpose(b, b.input("x", f32({2048, 2048})), {1, 0}));
       }},
      {"gather", "f32[32000,512] rows at i32[8192]", 32000,
       [=](Builder& b) {
         b.output(ops::gather(b, b.input("table", f32({32000, 512})), b.input("ids", i32({8192}))));
       }},
      {"cross_entropy", "f32[2048,8000] logits, i32[2048]", 8000,
       [=](Builder& b) {
         b.output(ops::cross_entropy(b, b.input("logits", f32({2048, 8000})), b.input("labels", i32({2048})), 0.1));
       }},
  };
}

// splitmix64: inputs that are the same on every run of the benchmark.
class Random {
 public:
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
  }
  float uniform(float lo, float hi) { return lo + (hi - lo) * static_cast<float>(next() >> 40) * 0x1.0p-24f; }

 private:
  uint64_t state_ = 2024;
};

// f32 inputs uniform in [-2, 2], i32 inputs in [0, index_bound).
std::map<std::string, Tensor> random_inputs(const Graph& g, int32_t index_bound) {
  Random rng;
  std::map<std::string, Tensor> inputs;
  for (Value v : g.declarations()) {
    Tensor t = Tensor::zeros(g.type(v));
    if (t.dtype() == DType::f32)
      for (float& x : t.f32()) x = rng.uniform(-2.0f, 2.0f);
    else
      for (int32_t& x : t.i32()) x = static_cast<int32_t>(rng.next() % static_cast<uint64_t>(index_bound));
    inputs.emplace(g.name_of(v), std::move(t));
  }
  return inputs;
}

void bind_all(Executable& exe, const std::map<std::string, Tensor>& inputs) {
  for (const auto& [name, t] : inputs) exe.bind(name, t);
}

// Every --op names a row: one that does not would leave the table silently empty.
void check_rows(const BenchOptions& opts) {
  std::vector<std::string> rows;
  for (const BenchCase& c : bench_cases()) rows.push_back(c.name);
  for (const std::string& op : opts.ops)
    if (std::find(rows.begin(), rows.end(), op) == rows.end()) {
      std::string msg = "--op: no benchmark row '" + op + "' (rows:";
      for (const std::string& r : rows) msg += " " + r;
      throw Error(msg + ")");
    }
}

bool selected(const BenchOptions& opts, const std::string& name) {
  return opts.ops.empty() || std::find(opts.ops.begin(), opts.ops.end(), name) != opts.ops.end();
}

double compile_ms(const compiler::JitExecutable& jit) {
  const compiler::CompileTimes& t = jit.compile_times();
  return t.lower_ms + t.optimize_ms + t.codegen_ms;
}

void print_op_table(const BenchOptions& opts) {
  std::printf("%-14s %-34s %10s %10s %9s %11s %5s\n", "op", "operands", "interp ms", "jit ms", "speedup", "compile ms",
              "runs");
  for (const BenchCase& c : bench_cases()) {
    if (!selected(opts, c.name)) continue;
    Graph g(c.name);
    Builder b(g);
    c.build(b);
    const std::map<std::string, Tensor> inputs = random_inputs(g, c.index_bound);
    std::unique_ptr<compiler::JitExecutable> jit;
    try {
      compiler::JitOptions o;
      o.target_cpu = opts.target_cpu;
      jit = std::make_unique<compiler::JitExecutable>(g, o);
    } catch (const Error& e) {
      std::printf("%-14s %-34s skipped: %s\n", c.name.c_str(), c.shapes.c_str(), e.what());
      continue;
    }
    Interpreter interp(g);
    bind_all(interp, inputs);
    bind_all(*jit, inputs);
    const Timing ti = time_runs(interp, opts);
    const Timing tj = time_runs(*jit, opts);
    std::printf("%-14s %-34s %10.3f %10.3f %8.1fx %11.1f %5d\n", c.name.c_str(), c.shapes.c_str(), ti.median_ms,
                tj.median_ms, ti.median_ms / tj.median_ms, compile_ms(*jit), std::min(ti.runs, tj.runs));
    std::fflush(stdout);
  }
}

}  // namespace

int bench_lanes(const BenchOptions& opts) {
  const compiler::Target host = compiler::detect_target();
  if (opts.target_cpu.empty()) return host.vector_width;
  compiler::Target target;
  try {
    target = compiler::detect_target(opts.target_cpu);
  } catch (const Error& e) {
    throw Error(std::string("--target-cpu: ") + e.what());
  }
  if (target.vector_width > host.vector_width || (target.bf16_dot && !host.bf16_dot))
    throw Error("--target-cpu " + opts.target_cpu + ": this host (" + host.cpu + ") cannot run its code");
  return target.vector_width;
}

void bench(const BenchOptions& opts) {
  kiln_set_num_threads(opts.threads);
  bench_lanes(opts);  // an unknown or too new --target-cpu fails before anything runs
  if (!opts.model.empty()) return bench_model(opts);
  if (opts.peak) return bench_peak(opts);
  if (opts.json) throw Error("bench: --json needs --peak or --model");
  check_rows(opts);
  const compiler::Target target = compiler::detect_target(opts.target_cpu);
  std::printf(
      "kiln bench: %s (%s), %d f32 lanes; JIT on %d threads, interpreter on 1; median of up to %d runs "
      "after a warm-up\n",
      target.cpu.c_str(), target.triple.c_str(), target.vector_width, kiln_num_threads(), opts.repeats);
  // Wall-clock times: other processes on the machine slow them down.
  double load[1];
  if (getloadavg(load, 1) == 1) std::printf("load average at start: %.2f\n", load[0]);
  std::printf("\n");
  print_op_table(opts);
  if (selected(opts, "matmul")) bench_gemm(opts);
}

}  // namespace kiln::cli
