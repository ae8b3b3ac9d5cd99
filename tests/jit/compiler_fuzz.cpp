#include "jit/compiler_fuzz.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <functional>
#include <iomanip>
#include <set>
#include <sstream>

#include <xtensor/xbroadcast.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xoperation.hpp>

#include "compiler/jit_executable.h"
#include "compiler/passes/passes.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/atomic_file.h"
#include "engine/fnv1a.h"
#include "engine/interpreter.h"
#include "engine/ir/liveness.h"
#include "engine/ir/printer.h"
#include "ir/shrink_graph.h"

namespace kiln::test {

namespace {

constexpr int kSteps = 2;

// What one backend did with the bindings: every output and final param/state
// value (by a label naming it), or the run-time error that stopped it.
struct Observed {
  std::map<std::string, Tensor> values;
  std::string error;
  int error_step = -1;
};

// Binds `bindings` and runs kSteps steps, calling after_step() after each that
// completes; a run-time error stops it and is recorded in `o`.
void run_steps(Executable& e, const std::map<std::string, Tensor>& bindings, Observed& o,
               const std::function<void()>& after_step) {
  for (const auto& [name, t] : bindings) e.bind(name, t);
  for (int step = 0; step < kSteps; ++step) {
    try {
      e.run();
    } catch (const std::exception& err) {
      o.error = err.what();
      o.error_step = step;
      return;
    }
    after_step();
  }
}

Observed observe(Executable& e, const std::map<std::string, Tensor>& bindings) {
  Observed o;
  run_steps(e, bindings, o, [] {});
  if (o.error_step >= 0) return o;
  for (const std::string& name : e.output_names()) o.values.emplace("output %" + name, e.output(name));
  const Graph& g = e.graph();
  for (Value v : g.declarations())
    if (g.value(v).kind != ValueKind::input) o.values.emplace("final %" + g.name_of(v), e.binding(g.name_of(v)));
  return o;
}

// How far each f32 result moves when every f32 binding is nudged by 4 ulps: the
// JIT's rounding (another summation order, fast exp/log/tanh) is worth a few ulps
// of its inputs, so an ill-conditioned element (a sum of large terms that cancel,
// a sharp softmax) earns that much more room. f32 bindings are scaled by
// 1 +- 2^-22 with random signs; an element that moved by d gets 8 d of slack.
// Where the nudged run stops differently, no slack.
std::map<std::string, Tensor> sensitivity(const Graph& g, const std::map<std::string, Tensor>& bindings,
                                          const Observed& want) {
  Rng rng(fnv1a_64(print_kir(g)) ^ 0x9e3779b97f4a7c15ULL);
  std::map<std::string, Tensor> nudged_bindings = bindings;
  for (auto& [name, t] : nudged_bindings) {
    if (t.dtype() != DType::f32) continue;
    for (float& x : t.f32()) x *= rng.coin() ? 1.0f - 0x1p-22f : 1.0f + 0x1p-22f;
  }
  Interpreter interp(g);
  const Observed nudged = observe(interp, nudged_bindings);
  std::map<std::string, Tensor> slack;
  if (nudged.error != want.error || nudged.error_step != want.error_step) return slack;
  for (const auto& [label, t] : want.values) {
    if (t.dtype() != DType::f32) continue;
    Tensor::F32 moved = xt::abs(t.f32() - nudged.values.at(label).f32()) * 8.0f;
    for (float& m : moved) m = std::isfinite(m) ? m : 0.0f;
    slack.emplace(label, Tensor(std::move(moved)));
  }
  return slack;
}

// "" if the JIT observed what the interpreter did, else the first difference.
std::string difference(const Observed& want, const Observed& got, const std::map<std::string, Tensor>& slack,
                       std::string& kind, Tolerance tol) {
  if (want.error != got.error || want.error_step != got.error_step) {
    kind = "error";
    const auto said = [](const Observed& o) {
      return o.error.empty() ? std::string("no error") : "'" + o.error + "' at step " + std::to_string(o.error_step);
    };
    return "interpreter: " + said(want) + "; jit: " + said(got);
  }
  kind = "result";
  for (const auto& [label, t] : want.values) {
    const auto it = got.values.find(label);
    if (it == got.values.end()) return label + " missing";
    const auto room = slack.find(label);
    const Tensor* extra = room == slack.end() ? nullptr : &room->second;
    if (std::string d = compare_tensors(t, it->second, tol, extra); !d.empty()) return label + ": " + d;
  }
  return "";
}

// Each step's outputs (by name) until the run stops or errs.
std::vector<std::map<std::string, Tensor>> outputs_per_step(Executable& e,
                                                            const std::map<std::string, Tensor>& bindings) {
  std::vector<std::map<std::string, Tensor>> steps;
  Observed stopped;
  run_steps(e, bindings, stopped, [&] {
    std::map<std::string, Tensor>& out = steps.emplace_back();
    for (const std::string& name : e.output_names()) out.emplace(name, e.output(name));
  });
  return steps;
}

bool is_f32_comparison(const Graph& g, const Node& n) {
  static const std::set<std::string> comparisons = {"greater", "greater_equal", "less", "less_equal", "equal"};
  return comparisons.count(n.op()) == 1 && g.type(n.operands[0]).dtype == DType::f32;
}

// Whether the JIT (pipeline p, `threads` threads) decided an f32 comparison of g
// the other way from the interpreter only where the interpreter's operands were
// tied (decision_flips), at some step. Both backends run g with every live
// comparison's operands and result as outputs (that may fuse differently; a flip
// that does not show there is not excused). Returns where the first such flip was,
// or "" if none was, or if one was where the operands were not tied (a real
// difference).
std::string tie_flip(const Graph& g, const std::map<std::string, Tensor>& bindings, const FuzzPipeline& p,
                     int threads, Tolerance tol) {
  Graph probe = g;
  std::vector<const Node*> comparisons;
  std::set<int> shown;
  const auto show = [&](Value v) {
    if (shown.insert(v.id).second) probe.add_output(v);
  };
  const std::vector<bool> live = live_nodes(g);
  for (size_t i = 0; i < g.nodes().size(); ++i) {
    const Node& n = g.nodes()[i];
    if (!live[i] || !is_f32_comparison(g, n)) continue;
    comparisons.push_back(&n);
    for (Value v : {n.operands[0], n.operands[1], n.results[0]}) show(v);
  }
  if (comparisons.empty()) return "";
  Interpreter interp(probe);
  const auto want = outputs_per_step(interp, bindings);
  compiler::JitOptions options;
  options.pipeline = p.options;
  std::optional<compiler::JitExecutable> jit;
  try {
    jit.emplace(probe, options);
  } catch (const std::exception&) {
    return "";  // nothing shows a tie: the failure stands
  }
  kiln_set_num_threads(threads);
  const auto got = outputs_per_step(*jit, bindings);
  kiln_set_num_threads(0);
  std::string first;
  for (size_t step = 0; step < std::min(want.size(), got.size()); ++step) {
    for (const Node* n : comparisons) {
      const Tensor& a = want[step].at(g.name_of(n->operands[0]));
      const Tensor& b = want[step].at(g.name_of(n->operands[1]));
      const std::string& result = g.name_of(n->results[0]);
      const DecisionFlips flips = decision_flips(a, b, want[step].at(result), got[step].at(result), tol);
      if (flips.kind == DecisionFlips::elsewhere) return "";
      if (flips.kind == DecisionFlips::none || !first.empty()) continue;
      std::ostringstream os;
      os << std::setprecision(9) << "%" << result << " = " << n->op() << "(%" << g.name_of(n->operands[0]) << ", %"
         << g.name_of(n->operands[1]) << ") decided the other way at step " << step + 1 << ", element "
         << flips.element << ", where its operands are tied (" << flips.a << " and " << flips.b
         << " in the interpreter)";
      first = os.str();
    }
  }
  return first;
}

FuzzPipeline pipeline(std::string name, std::vector<std::string> passes) {
  FuzzPipeline p{std::move(name), {}};
  p.options.passes.passes = std::move(passes);
  p.options.passes.verify_each = true;  // a pass that breaks the graph is a failure too
  return p;
}

}  // namespace

DecisionFlips decision_flips(const Tensor& a, const Tensor& b, const Tensor& want, const Tensor& got, Tolerance tol) {
  const xt::xarray<bool> flipped = xt::not_equal(want.b8(), got.b8());
  const xt::xarray<float> a_at = xt::broadcast(a.f32(), flipped.shape());
  const xt::xarray<float> b_at = xt::broadcast(b.f32(), flipped.shape());
  DecisionFlips flips;
  for (size_t i = 0; i < flipped.size(); ++i) {
    if (!flipped.flat(i)) continue;
    const float x = a_at.flat(i), y = b_at.flat(i);
    const bool tied = std::fabs(x - y) <= tol.abs + tol.rel * std::max(std::fabs(x), std::fabs(y));
    if (!tied) return {DecisionFlips::elsewhere, i, x, y};
    if (flips.kind == DecisionFlips::none) flips = {DecisionFlips::at_ties, i, x, y};
  }
  return flips;
}

std::vector<FuzzPipeline> fuzz_pipelines() {
  std::vector<FuzzPipeline> out = {pipeline("none", {std::string(compiler::kNoPasses)})};
  for (const compiler::Pass* p : compiler::PassRegistry::global().all()) out.push_back(pipeline(p->name, {p->name}));
  out.push_back(pipeline("default", {}));
  out.push_back(pipeline("default --precision bf16", {}));
  out.back().options.passes.precision = DType::bf16;
  out.push_back(pipeline("default --no-reuse", {}));
  out.back().options.reuse = false;
  out.push_back(pipeline("default, assigns not in place", {}));
  out.back().options.update_in_place = false;
  return out;
}

bool FuzzFailure::same_way(const FuzzFailure& other) const {
  return pipeline == other.pipeline && threads == other.threads && kind == other.kind;
}

std::string FuzzFailure::str() const {
  return "pipeline '" + pipeline + "', " + std::to_string(threads) + " thread(s), " + kind + ": " + detail +
         (tie.empty() ? "" : "; excused: " + tie);
}

std::map<std::string, Tensor> fuzz_bindings(const Graph& g) {
  Rng rng(fnv1a_64(print_kir(g)));
  return random_bindings(g, rng, Values::moderate);
}

std::optional<FuzzFailure> check_compiler(const Graph& g, const std::vector<FuzzPipeline>& pipelines,
                                          const std::vector<int>& threads) {
  const std::map<std::string, Tensor> bindings = fuzz_bindings(g);
  // What the interpreter observes of the graph a pipeline computes: g, or with
  // a precision pass (bf16-matmuls, bf16-saves) the graph its passes make up to
  // the last of them (they change the arithmetic on purpose; in the default
  // pipeline they run after flash-attention, alone on g).
  struct Reference {
    Graph graph;
    Observed want;
    std::map<std::string, Tensor> slack;
  };
  std::map<std::vector<std::string>, Reference> references;  // by the passes that make the graph
  const auto reference = [&](const std::vector<std::string>& passes) -> const Reference& {
    auto it = references.find(passes);
    if (it != references.end()) return it->second;
    Reference r{g, {}, {}};
    for (const std::string& name : passes) r.graph = compiler::PassRegistry::global().get(name).run(r.graph, nullptr);
    Interpreter interp(r.graph);
    r.want = observe(interp, bindings);
    r.slack = sensitivity(r.graph, bindings, r.want);
    return references.emplace(passes, std::move(r)).first->second;
  };
  std::optional<FuzzFailure> excused;
  for (const FuzzPipeline& p : pipelines) {
    const std::vector<std::string> names = compiler::pipeline_passes(p.options.passes);
    auto last_precision = names.end();
    for (auto it = names.begin(); it != names.end(); ++it)
      if (std::find(compiler::kBf16Passes.begin(), compiler::kBf16Passes.end(), *it) != compiler::kBf16Passes.end())
        last_precision = it;
    const bool bf16 = last_precision != names.end();
    const Reference& ref = reference(bf16 ? std::vector<std::string>(names.begin(), last_precision + 1)
                                          : std::vector<std::string>{});
    const Observed& want = ref.want;
    const std::map<std::string, Tensor>& slack = ref.slack;
    compiler::JitOptions options;
    options.pipeline = p.options;
    std::optional<compiler::JitExecutable> jit;
    try {
      jit.emplace(g, options);
    } catch (const std::exception& e) {
      return FuzzFailure{p.name, threads.front(), "compile", e.what(), {}};
    }
    for (int n : threads) {
      kiln_set_num_threads(n);
      const Observed got = observe(*jit, bindings);
      kiln_set_num_threads(0);
      std::string kind;
      const Tolerance tol = bf16 ? kBf16FuzzTolerance : kFuzzTolerance;
      const std::string d = difference(want, got, slack, kind, tol);
      if (d.empty()) continue;
      FuzzFailure f{p.name, n, kind, d, tie_flip(ref.graph, bindings, p, n, tol)};
      if (!f.excused()) return f;
      if (!excused) excused = std::move(f);
    }
  }
  return excused;
}

Shrunk shrink_failure(const Graph& g, const FuzzFailure& failure) {
  std::vector<FuzzPipeline> only;
  for (FuzzPipeline& p : fuzz_pipelines())
    if (p.name == failure.pipeline) only.push_back(std::move(p));
  const auto check = [&](const Graph& v) { return check_compiler(v, only, {failure.threads}); };
  ShrinkResult r = shrink_graph(g, [&](const Graph& v) {
    const std::optional<FuzzFailure> f = check(v);
    return f && !f->excused() && f->same_way(failure);
  });
  FuzzFailure own = check(r.graph).value_or(failure);
  return {std::move(r.graph), std::move(own), r.tries};
}

std::string save_regression(const Shrunk& shrunk, uint64_t seed, const std::string& dir, const std::string& name) {
  std::string text = "# Found by tools/fuzz_compiler.sh (seed ";
  text += std::to_string(seed);
  text += ") and shrunk; it failed with\n# ";
  for (char c : shrunk.failure.str()) {
    text += c;
    if (c == '\n') text += "# ";
  }
  text += "\n";
  text += print_kir(shrunk.graph);
  const std::string path = dir + "/" + name + ".kir";
  write_file_atomically(path, text);
  return path;
}

}  // namespace kiln::test
