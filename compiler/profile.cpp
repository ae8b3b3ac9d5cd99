#include "compiler/profile.h"

#include <algorithm>
#include <map>
#include <set>
#include <nlohmann/json.hpp>

#include "compiler/schedule/kernel.h"

namespace kiln::compiler {
namespace {

// Multiply-adds of the products in a node (0 for other ops).
double product_flops(const Graph& g, const Node& n) {
  const auto dim = [&](size_t operand, size_t from_end) {
    const Shape& s = g.type(n.operands[operand]).shape;
    return static_cast<double>(s[s.size() - from_end]);
  };
  if (n.op() == "matmul") {
    const double k = dim(0, n.attrs.get_bool("transpose_a") ? 2 : 1);
    return 2 * static_cast<double>(g.type(n.results[0]).numel()) * k;
  }
  if (n.op() == "flash_attention" || n.op() == "flash_attention_backward") {
    // q [..., T, D], k [..., S, D], v [..., S, Dv]: scores T x S x D and
    // the weighted sum T x S x Dv; the backward recomputes the scores and
    // makes dv, dp (T x S x Dv), dq and dk (T x S x D).
    // With causal, only the pairs j <= i + S - T: S per row on average for T == S,
    // half of them.
    const double t = dim(0, 2), s = dim(1, 2), d = dim(0, 1), dv = dim(2, 1);
    const double batch = static_cast<double>(g.type(n.operands[0]).numel()) / (t * d);
    double pairs = t * s;
    if (n.attrs.get_int("causal") == 1) {
      pairs = 0;
      for (double i = 0; i < t; ++i) pairs += std::clamp(i + s - t + 1, 0.0, s);
    }
    return n.op() == "flash_attention" ? 2 * batch * pairs * (d + dv) : 2 * batch * pairs * (3 * d + 2 * dv);
  }
  // h [N, D], w [V, D]: the logits N x V x D; the backward makes them again and
  // then dh and dw (each N x V x D); the train op makes them once for all three.
  const double logits = n.op().rfind("linear_cross_entropy", 0) == 0 ? 2 * dim(0, 2) * dim(0, 1) * dim(1, 2) : 0;
  if (n.op() == "linear_cross_entropy") return logits;
  if (n.op() == "linear_cross_entropy_backward" || n.op() == "linear_cross_entropy_train") return 3 * logits;
  return 0;
}

double node_flops(const Graph& g, const Node& n) {
  if (const double f = product_flops(g, n); f > 0) return f;
  int64_t elements = 0;  // one per element of its largest operand or result
  for (Value v : n.operands) elements = std::max(elements, g.type(v).numel());
  for (Value v : n.results) elements = std::max(elements, g.type(v).numel());
  return static_cast<double>(elements);
}

// "matmul, add, relu", "exp x2": the kernel's ops in order, repeats counted.
std::string op_list(const Graph& g) {
  std::vector<std::pair<std::string, int>> runs;
  for (const Node& n : g.nodes()) {
    if (!runs.empty() && runs.back().first == n.op())
      ++runs.back().second;
    else
      runs.emplace_back(n.op(), 1);
  }
  std::string out;
  for (const auto& [op, count] : runs) {
    if (!out.empty()) out += ", ";
    out += op;
    if (count > 1) out += " x" + std::to_string(count);
  }
  return out;
}

}  // namespace

CallCost call_cost(const Program& p, const KernelCall& call) {
  CallCost c;
  const Graph& g = *p.kernels[call.kernel].graph;
  for (const Node& n : g.nodes()) c.flops += node_flops(g, n);
  for (int b : call.args) c.bytes += static_cast<double>(p.buffers[static_cast<size_t>(b)].bytes());
  return c;
}

std::vector<KernelProfileRow> kernel_profile(const Program& p, const RunProfile& r) {
  std::map<std::string, KernelProfileRow> rows;
  std::map<std::string, std::set<std::string>> scopes;  // by row: its calls' model parts
  const double runs = std::max(r.runs, 1);
  for (const CallSpan& span : r.calls) {
    const KernelCall& call = p.calls[span.call];
    const Kernel& k = p.kernels[call.kernel];
    KernelProfileRow& row = rows[describe(k)];
    if (row.kernel.empty()) {
      row.kernel = describe(k);
      row.ops = op_list(*k.graph);
    }
    scopes[row.kernel].insert(call_scope(call.owner));
    const CallCost cost = call_cost(p, call);
    row.calls += 1;
    row.ms += span.ms();
    row.flops += cost.flops;
    row.bytes += cost.bytes;
  }
  std::vector<KernelProfileRow> out;
  for (auto& [name, row] : rows) {
    const std::set<std::string>& parts = scopes[name];
    const std::string common = common_scope({parts.begin(), parts.end()});
    row.scope = parts.size() == 1 ? *parts.begin()
                : common.empty()  ? std::to_string(parts.size()) + " scopes"
                                  : common + " (" + std::to_string(parts.size()) + " scopes)";
    row.calls = static_cast<int>(row.calls / runs);
    row.ms /= runs;
    row.flops /= runs;
    row.bytes /= runs;
    out.push_back(std::move(row));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) { return a.ms > b.ms; });
  return out;
}

std::vector<ScopeProfileRow> scope_profile(const Program& p, const RunProfile& r, int depth) {
  std::map<std::string, ScopeProfileRow> rows;
  const double runs = std::max(r.runs, 1);
  for (const CallSpan& span : r.calls) {
    std::set<std::string> scopes;
    for (const std::string& s : p.calls[span.call].owner.scopes) scopes.insert(scope_prefix(s, depth));
    if (scopes.empty()) scopes.insert("");
    const double share = 1.0 / static_cast<double>(scopes.size());
    for (const std::string& s : scopes) {
      ScopeProfileRow& row = rows[std::string(forward_scope(s))];
      (is_backward_scope(s) ? row.backward_ms : row.forward_ms) += share * span.ms() / runs;
      row.calls += share / runs;
    }
  }
  std::vector<ScopeProfileRow> out;
  for (auto& [scope, row] : rows) {
    row.scope = scope;
    out.push_back(std::move(row));
  }
  std::sort(out.begin(), out.end(), [](const auto& a, const auto& b) {
    return a.forward_ms + a.backward_ms > b.forward_ms + b.backward_ms;
  });
  return out;
}

int64_t collective_bytes(const Program& p, size_t collective) {
  const CollectiveCall& c = p.collectives[collective];
  int64_t bytes = 0;
  for (size_t a = c.num_inputs; a < c.args.size(); ++a) bytes += p.buffers[static_cast<size_t>(c.args[a])].bytes();
  return bytes;
}

CollectiveTimes collective_times(const Program& p, const RunProfile& r) {
  CollectiveTimes t;
  for (const CollectiveSpan& c : r.collectives) {
    t.bytes += static_cast<double>(collective_bytes(p, c.collective));
    t.in_flight_ms += static_cast<double>(c.done_ns - c.start_ns) / 1e6;
    t.wait_ms += static_cast<double>(c.wait_end_ns - c.wait_begin_ns) / 1e6;
    t.start_ms += static_cast<double>(c.started_ns - c.start_ns) / 1e6;
  }
  if (r.runs > 0)
    for (double* x : {&t.bytes, &t.in_flight_ms, &t.wait_ms, &t.start_ms}) *x /= r.runs;
  return t;
}

std::string chrome_trace(const Program& p, const RunProfile& r) {
  using nlohmann::ordered_json;
  int64_t origin = r.calls.empty() ? 0 : r.calls.front().begin_ns;
  if (!r.collectives.empty()) origin = std::min(origin, r.collectives.front().start_ns);
  const auto us = [&](int64_t ns) { return static_cast<double>(ns - origin) / 1e3; };
  ordered_json events = ordered_json::array();
  const auto track_name = [&](int tid, const std::string& name) {
    events.push_back({{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", tid}, {"args", {{"name", name}}}});
  };
  int threads = 1;
  for (const ChunkSpan& c : r.chunks) threads = std::max(threads, c.thread + 1);
  for (int t = 0; t < threads; ++t) track_name(t, t == 0 ? "thread 0 (the caller)" : "worker " + std::to_string(t));

  // Which call a chunk belongs to: the call whose span holds its start.
  std::vector<CallSpan> by_start = r.calls;
  std::sort(by_start.begin(), by_start.end(), [](const auto& a, const auto& b) { return a.begin_ns < b.begin_ns; });
  for (const CallSpan& span : r.calls) {
    const KernelCall& call = p.calls[span.call];
    const CallCost cost = call_cost(p, call);
    const std::string scope = call_scope(call.loc);
    events.push_back({{"name", (scope.empty() ? "" : scope + ": ") + describe(p.kernels[call.kernel])},
                      {"cat", p.kernels[call.kernel].label},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", 0},  // the caller runs every call; its own chunks nest inside
                      {"ts", us(span.begin_ns)},
                      {"dur", us(span.end_ns) - us(span.begin_ns)},
                      {"args",
                       {{"call", span.call},
                        {"kernel", numbered("k", call.kernel)},
                        {"scopes", describe(call.loc)},
                        {"flops", cost.flops},
                        {"bytes", cost.bytes}}}});
  }
  for (const ChunkSpan& c : r.chunks) {
    auto it = std::upper_bound(by_start.begin(), by_start.end(), c.begin_ns,
                               [](int64_t t, const CallSpan& s) { return t < s.begin_ns; });
    const std::string name =
        it == by_start.begin() ? "loop" : describe(p.kernels[p.calls[std::prev(it)->call].kernel]);
    events.push_back({{"name", name},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", c.thread},
                      {"ts", us(c.begin_ns)},
                      {"dur", us(c.end_ns) - us(c.begin_ns)}});
  }
  // Collectives on a track of their own: each one in flight, from its start to
  // when a test or its wait saw it done; its wait, where the caller stood still,
  // on the caller's track.
  if (!r.collectives.empty()) track_name(threads, "collectives (in flight)");
  for (const CollectiveSpan& c : r.collectives) {
    const std::string name = p.collectives[c.collective].op + "#" + std::to_string(c.collective);
    const auto args = ordered_json{{"collective", c.collective}, {"bytes", collective_bytes(p, c.collective)}};
    events.push_back({{"name", name}, {"cat", "collective"}, {"ph", "X"}, {"pid", 0}, {"tid", threads},
                      {"ts", us(c.start_ns)}, {"dur", us(c.done_ns) - us(c.start_ns)}, {"args", args}});
    events.push_back({{"name", "wait " + name}, {"cat", "collective"}, {"ph", "X"}, {"pid", 0}, {"tid", 0},
                      {"ts", us(c.wait_begin_ns)}, {"dur", us(c.wait_end_ns) - us(c.wait_begin_ns)}, {"args", args}});
  }
  ordered_json trace = {{"traceEvents", events}, {"displayTimeUnit", "ms"}};
  return trace.dump() + "\n";
}

}  // namespace kiln::compiler
