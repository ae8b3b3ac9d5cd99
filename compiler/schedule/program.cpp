#include "compiler/schedule/program.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <map>

#include "engine/ir/error.h"
#include "engine/ir/liveness.h"
#include "engine/ir/op_def.h"

namespace kiln::compiler {

std::string_view buffer_kind_name(BufferKind k) {
  switch (k) {
    case BufferKind::input: return "input";
    case BufferKind::param: return "param";
    case BufferKind::state: return "state";
    case BufferKind::output: return "output";
    case BufferKind::invariant: return "invariant";
    case BufferKind::temp: return "temp";
  }
  return "?";
}

int64_t ProgramBuffer::bytes() const { return type.numel() * static_cast<int64_t>(dtype_size(type.dtype)); }

namespace {

BufferKind declaration_kind(ValueKind k) {
  switch (k) {
    case ValueKind::input: return BufferKind::input;
    case ValueKind::param: return BufferKind::param;
    case ValueKind::state: return BufferKind::state;
    case ValueKind::result: break;
  }
  throw Error("program: a node result is not a declaration");
}

}  // namespace

namespace {

// Gives each assign's value the target's memory where that is safe (ProgramBuffer::alias).
// Linear in the program's size however many assigns one call serves (an
// optimizer's horizontal kernel writes every param's update).
void alias_updates(Program& p) {
  std::vector<int> writer(p.buffers.size(), -1), written_as(p.buffers.size(), -1), last_reader(p.buffers.size(), -1);
  std::vector<bool> is_target(p.buffers.size(), false);
  for (const auto& [target, value] : p.assigns) is_target[static_cast<size_t>(target)] = true;
  std::map<std::pair<size_t, int>, std::vector<size_t>> target_inputs;  // (call, target) -> its input positions
  for (size_t c = 0; c < p.calls.size(); ++c) {
    const KernelCall& call = p.calls[c];
    for (size_t a = 0; a < call.args.size(); ++a) {
      const auto b = static_cast<size_t>(call.args[a]);
      if (a < call.num_inputs) {
        last_reader[b] = static_cast<int>(c);
        if (is_target[b]) target_inputs[{c, call.args[a]}].push_back(a);
      } else {
        writer[b] = static_cast<int>(c);
        written_as[b] = static_cast<int>(a - call.num_inputs);
      }
    }
  }
  // A collective reads its operands when it starts, just before call before_call.
  for (const CollectiveEvent& e : p.events) {
    if (e.kind != CollectiveEvent::Kind::start) continue;
    const CollectiveCall& cc = p.collectives[e.collective];
    for (size_t a = 0; a < cc.num_inputs; ++a) {
      int& last = last_reader[static_cast<size_t>(cc.args[a])];
      last = std::max(last, static_cast<int>(e.before_call));
    }
  }
  std::vector<bool> read_after_run(p.buffers.size(), false);  // outputs and assign values read the old target
  for (int o : p.outputs) read_after_run[static_cast<size_t>(o)] = true;
  for (const auto& [target, value] : p.assigns) read_after_run[static_cast<size_t>(value)] = true;
  for (const auto& [target, value] : p.assigns) {
    ProgramBuffer& v = p.buffers[static_cast<size_t>(value)];
    const int c = writer[static_cast<size_t>(value)];
    if (v.kind != BufferKind::temp || v.alias >= 0 || c < 0 || read_after_run[static_cast<size_t>(target)] ||
        last_reader[static_cast<size_t>(target)] > c)
      continue;
    const Kernel& k = p.kernels[p.calls[static_cast<size_t>(c)].kernel];
    const auto out = static_cast<size_t>(written_as[static_cast<size_t>(value)]);
    bool safe = true;
    if (const auto it = target_inputs.find({static_cast<size_t>(c), target}); it != target_inputs.end())
      for (size_t in : it->second)  // k.in_place is sorted
        safe = safe && std::binary_search(k.in_place.begin(), k.in_place.end(), std::pair{in, out});
    if (safe) v.alias = target;
  }
}

// A run-invariant result that only other invariant calls read is needed only
// while they run, which they all do in the same run: a temp in the arena. The
// others keep their value across runs, outside the arena.
void arena_for_invariants_read_once(Program& p) {
  std::vector<bool> read_every_run(p.buffers.size(), false);
  const auto inputs_of = [&](const std::vector<int>& args, size_t num_inputs) {
    for (size_t a = 0; a < num_inputs; ++a) read_every_run[static_cast<size_t>(args[a])] = true;
  };
  for (const KernelCall& c : p.calls)
    if (!c.invariant) inputs_of(c.args, c.num_inputs);
  for (const CollectiveCall& c : p.collectives) inputs_of(c.args, c.num_inputs);
  for (const auto& [target, value] : p.assigns) read_every_run[static_cast<size_t>(value)] = true;
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].kind == BufferKind::invariant && !read_every_run[b]) p.buffers[b].kind = BufferKind::temp;
}

// KernelCall::owner: the locations of a body's ops that are not elementwise,
// data movement or constants, where it has such ops.
Location owner_of(const Node& node) {
  if (!node.body) return node.loc;
  Location owner;
  for (const Node& n : node.body->nodes())
    if (!n.def->elementwise && !n.def->moves_elements && !n.def->constant && !n.body) owner.merge(n.loc);
  return owner.scopes.empty() ? node.loc : owner;
}

// Per value of g: whether it is a param the graph never assigns, the first
// run-invariant values (KernelCall::invariant); results are added as they are scheduled.
std::vector<bool> unassigned_params(const Graph& g) {
  std::vector<bool> out(g.num_values(), false);
  for (Value v : g.declarations(ValueKind::param)) out[static_cast<size_t>(v.id)] = true;
  for (const Node& n : g.nodes())
    if (n.def->side_effect) out[static_cast<size_t>(n.operands[0].id)] = false;
  return out;
}

}  // namespace

Program build_program(const Graph& g, bool reuse, bool update_in_place, bool invariants) {
  Program p;
  p.name = g.name();
  p.num_values = g.num_values();
  std::vector<bool> is_output(g.num_values(), false);
  for (Value v : g.outputs()) is_output[static_cast<size_t>(v.id)] = true;
  std::vector<int> buffer_of(g.num_values(), -1);
  const auto add_buffer = [&](Value v, BufferKind kind) {
    buffer_of[static_cast<size_t>(v.id)] = static_cast<int>(p.buffers.size());
    const Location loc = g.value(v).kind == ValueKind::result ? g.producer(v).loc : Location{};
    p.buffers.push_back({g.name_of(v), g.type(v), kind, v, -1, loc});
  };
  for (Value v : g.declarations()) add_buffer(v, declaration_kind(g.value(v).kind));

  std::map<std::string, size_t> kernel_by_text;
  // Per value: the collective that writes it and has not been waited for yet.
  std::vector<int> in_flight(g.num_values(), -1);
  std::vector<bool> waited;
  const auto wait_for = [&](int c) {
    if (c < 0 || waited[static_cast<size_t>(c)]) return;
    waited[static_cast<size_t>(c)] = true;
    p.events.push_back({CollectiveEvent::Kind::wait, static_cast<size_t>(c), p.calls.size()});
  };
  std::vector<bool> invariant = invariants ? unassigned_params(g) : std::vector<bool>(g.num_values(), false);
  const auto is_invariant = [&](Value v) { return invariant[static_cast<size_t>(v.id)]; };
  const std::vector<bool> live = live_nodes(g);
  for (size_t index = 0; index < g.nodes().size(); ++index) {
    if (!live[index]) continue;  // without dce (--passes=none) too
    const Node& node = g.nodes()[index];
    if (node.def->side_effect) {
      p.assigns.emplace_back(buffer_of[static_cast<size_t>(node.operands[0].id)],
                             buffer_of[static_cast<size_t>(node.operands[1].id)]);
      continue;
    }
    for (Value v : node.operands) wait_for(in_flight[static_cast<size_t>(v.id)]);
    if (node.def->collective) {
      const auto id = static_cast<int>(p.collectives.size());
      CollectiveCall cc{node.op(), {}, node.operands.size(), index};
      for (Value v : node.operands) cc.args.push_back(buffer_of[static_cast<size_t>(v.id)]);
      for (Value r : node.results) {
        add_buffer(r, is_output[static_cast<size_t>(r.id)] ? BufferKind::output : BufferKind::temp);
        cc.args.push_back(buffer_of[static_cast<size_t>(r.id)]);
        in_flight[static_cast<size_t>(r.id)] = id;
      }
      p.events.push_back({CollectiveEvent::Kind::start, static_cast<size_t>(id), p.calls.size()});
      p.collectives.push_back(std::move(cc));
      waited.push_back(false);
      continue;
    }
    Kernel k = make_kernel(g, node);
    auto [it, added] = kernel_by_text.emplace(k.text, p.kernels.size());
    if (added) p.kernels.push_back(std::move(k));
    KernelCall call{it->second, {}, node.operands.size(), index, node.loc, owner_of(node)};
    call.invariant = invariants && std::all_of(node.operands.begin(), node.operands.end(), is_invariant) &&
                     std::none_of(node.results.begin(), node.results.end(),
                                  [&](Value r) { return is_output[static_cast<size_t>(r.id)]; });
    for (Value v : node.operands) call.args.push_back(buffer_of[static_cast<size_t>(v.id)]);
    for (Value r : node.results) {
      add_buffer(r, is_output[static_cast<size_t>(r.id)] ? BufferKind::output
                    : call.invariant                      ? BufferKind::invariant
                                                          : BufferKind::temp);
      invariant[static_cast<size_t>(r.id)] = call.invariant;
      call.args.push_back(buffer_of[static_cast<size_t>(r.id)]);
    }
    p.calls.push_back(std::move(call));
  }
  for (size_t c = 0; c < p.collectives.size(); ++c) wait_for(static_cast<int>(c));  // read after the run
  for (Value v : g.outputs()) p.outputs.push_back(buffer_of[static_cast<size_t>(v.id)]);
  arena_for_invariants_read_once(p);
  if (update_in_place) alias_updates(p);
  p.plan = plan_memory(plan_buffers(p), plan_steps(p), reuse);
  return p;
}

std::vector<PlanBuffer> plan_buffers(const Program& p) {
  std::vector<PlanBuffer> out;
  for (const ProgramBuffer& b : p.buffers)
    out.push_back({b.name, b.bytes(), b.kind != BufferKind::temp || b.alias >= 0, false, call_scope(b.loc)});
  for (const auto& [target, value] : p.assigns)
    if (!out[static_cast<size_t>(value)].external) out[static_cast<size_t>(value)].live_out = true;
  return out;
}

namespace {

// A start writes the results over the operands where they die (each result is
// its operand's sum); a wait reads the results, which the ranks write until then.
PlanStep collective_step(const Program& p, const CollectiveEvent& e) {
  const CollectiveCall& c = p.collectives[e.collective];
  const auto inputs = static_cast<std::ptrdiff_t>(c.num_inputs);
  PlanStep s;
  if (e.kind == CollectiveEvent::Kind::wait) {
    s.name = c.op + ".wait";
    s.reads.assign(c.args.begin() + inputs, c.args.end());
    return s;
  }
  s.name = c.op + ".start";
  s.reads.assign(c.args.begin(), c.args.begin() + inputs);
  s.writes.assign(c.args.begin() + inputs, c.args.end());
  for (size_t i = 0; i < c.num_inputs; ++i) s.in_place.emplace_back(s.reads[i], s.writes[i]);
  return s;
}

}  // namespace

std::vector<PlanStep> plan_steps(const Program& p) {
  std::vector<PlanStep> steps;
  size_t e = 0;
  const auto events_before = [&](size_t call) {
    for (; e < p.events.size() && p.events[e].before_call == call; ++e) steps.push_back(collective_step(p, p.events[e]));
  };
  for (size_t c = 0; c < p.calls.size(); ++c) {
    events_before(c);
    const KernelCall& call = p.calls[c];
    const Kernel& k = p.kernels[call.kernel];
    PlanStep s;
    s.name = k.label;
    s.scope = call_scope(call.loc);
    s.reads.assign(call.args.begin(), call.args.begin() + static_cast<std::ptrdiff_t>(call.num_inputs));
    s.writes.assign(call.args.begin() + static_cast<std::ptrdiff_t>(call.num_inputs), call.args.end());
    for (const auto& [in, out] : k.in_place) s.in_place.emplace_back(s.reads[in], s.writes[out]);
    steps.push_back(std::move(s));
  }
  events_before(p.calls.size());
  return steps;
}

namespace {

std::string buffer_ref(const Program& p, int id) { return "%" + p.buffers[static_cast<size_t>(id)].name; }

std::string where(const Program& p, int id) {
  const ProgramBuffer& b = p.buffers[static_cast<size_t>(id)];
  if (b.alias >= 0) return buffer_ref(p, b.alias) + " (in place)";
  if (b.kind != BufferKind::temp) return std::string(buffer_kind_name(b.kind));
  return "arena+" + std::to_string(p.plan.offsets[static_cast<size_t>(id)]);
}

// "(%a, %b) -> %c : f32[4] @ arena+0": a call's operands and where its results go.
std::string args_text(const Program& p, const std::vector<int>& args, size_t num_inputs) {
  std::string line = "(";
  for (size_t a = 0; a < num_inputs; ++a) line += (a ? ", " : "") + buffer_ref(p, args[a]);
  line += ") -> ";
  for (size_t a = num_inputs; a < args.size(); ++a) {
    const ProgramBuffer& b = p.buffers[static_cast<size_t>(args[a])];
    line += (a > num_inputs ? ", " : "") + buffer_ref(p, args[a]) + " : " + type_str(b.type) + " @ " +
            where(p, args[a]);
  }
  return line;
}

}  // namespace

std::string call_scope(const Location& loc) {
  const std::string common = common_scope(loc.scopes);
  return common.empty() && !loc.scopes.empty() ? loc.scopes.front() : common;
}

std::string kernel_file_stem(const Program& p, size_t kernel) {
  std::string stem = numbered("k", kernel) + "-" + p.kernels[kernel].label;
  const auto first = std::find_if(p.calls.begin(), p.calls.end(), [&](const KernelCall& c) { return c.kernel == kernel; });
  const std::string scope = first == p.calls.end() ? std::string() : call_scope(first->loc);
  if (scope.empty()) return stem;
  stem += '-';
  stem += forward_scope(scope);
  if (is_backward_scope(scope)) stem += ".backward";
  for (char& c : stem)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') c = '_';
  return stem;
}

std::string print_program(const Program& p) {
  const auto invariant_calls =
      std::count_if(p.calls.begin(), p.calls.end(), [](const KernelCall& c) { return c.invariant; });
  std::string out = "program @" + p.name + ": " + std::to_string(p.calls.size()) + " calls of " +
                    std::to_string(p.kernels.size()) + " distinct kernels, " +
                    (invariant_calls == 0 ? ""
                                          : std::to_string(invariant_calls) +
                                                " of them [once] (run-invariant: on the first run and after a "
                                                "param is bound), ") +
                    (p.collectives.empty() ? "" : std::to_string(p.collectives.size()) + " collectives, ") + "arena " +
                    std::to_string(p.plan.arena_bytes) + " bytes (one buffer per value: " +
                    std::to_string(p.plan.naive_bytes) + ")\n";
  out += "calls:\n";
  size_t e = 0;
  const auto events_before = [&](size_t call) {
    for (; e < p.events.size() && p.events[e].before_call == call; ++e) {
      const CollectiveEvent& ev = p.events[e];
      const CollectiveCall& c = p.collectives[ev.collective];
      const std::string name = c.op + "#" + std::to_string(ev.collective);
      out += ev.kind == CollectiveEvent::Kind::wait ? "     wait " + name + "\n"
                                                    : "     start " + name + args_text(p, c.args, c.num_inputs) + "\n";
    }
  };
  for (size_t i = 0; i < p.calls.size(); ++i) {
    events_before(i);
    const KernelCall& c = p.calls[i];
    const std::string origin = describe(c.loc);
    out += "  " + std::to_string(i) + ": k" + std::to_string(c.kernel) + " " + p.kernels[c.kernel].label +
           args_text(p, c.args, c.num_inputs) + (c.invariant ? " [once]" : "") +
           (origin.empty() ? "" : "  # " + origin) + "\n";
  }
  events_before(p.calls.size());
  for (const auto& [target, value] : p.assigns)
    if (p.buffers[static_cast<size_t>(value)].alias != target)
      out += "  commit " + buffer_ref(p, value) + " -> " + buffer_ref(p, target) + "\n";
  out += "outputs:";
  for (int o : p.outputs) {
    out += ' ';
    out += buffer_ref(p, o);
  }
  out += "\nkernels:\n";
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    char hash[24];
    std::snprintf(hash, sizeof hash, "%016llx", static_cast<unsigned long long>(p.kernels[k].hash));
    out += numbered("  k", k) + " (" + p.kernels[k].label + ", hash " + hash + "): " + p.kernels[k].text;
  }
  return out;
}

}  // namespace kiln::compiler
