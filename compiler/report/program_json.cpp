#include "compiler/report/program_json.h"

#include "compiler/schedule/lifetimes.h"
#include "engine/ir/fusion_kind.h"

namespace kiln::compiler {
namespace {

nlohmann::json buffer_names(const Program& p, const std::vector<int>& ids) {
  nlohmann::json names = nlohmann::json::array();
  for (int id : ids) names.push_back(p.buffers[static_cast<size_t>(id)].name);
  return names;
}

// Per step of the memory plan (plan_steps: the calls, with the collectives'
// starts and waits between them), the call it is, or -1.
nlohmann::json step_calls(const Program& p) {
  nlohmann::json out = nlohmann::json::array();
  size_t e = 0;
  for (size_t c = 0; c <= p.calls.size(); ++c) {
    for (; e < p.events.size() && p.events[e].before_call == c; ++e) out.push_back(-1);
    if (c < p.calls.size()) out.push_back(c);
  }
  return out;
}

}  // namespace

nlohmann::json program_json(const Program& p, const Graph& compiled) {
  nlohmann::json calls = nlohmann::json::array();
  for (const KernelCall& call : p.calls) {
    const auto inputs = static_cast<std::ptrdiff_t>(call.num_inputs);
    const Node& node = compiled.nodes()[call.node];
    calls.push_back({{"kernel", call.kernel},
                     {"node", node.results.empty() ? std::string() : compiled.name_of(node.results.front())},
                     {"operands", buffer_names(p, std::vector<int>(call.args.begin(), call.args.begin() + inputs))},
                     {"results", buffer_names(p, std::vector<int>(call.args.begin() + inputs, call.args.end()))},
                     {"invariant", call.invariant}});
  }
  nlohmann::json kernels = nlohmann::json::array();
  for (const Kernel& k : p.kernels)
    kernels.push_back({{"label", k.label}, {"kind", std::string(fusion_kind_name(k.roles.kind))}, {"text", k.text}});
  const std::vector<PlanBuffer> buffers = plan_buffers(p);
  const std::vector<PlanStep> steps = plan_steps(p);
  const std::vector<Lifetime> lives = compute_lifetimes(buffers, steps);
  nlohmann::json out_buffers = nlohmann::json::array();
  for (size_t b = 0; b < p.buffers.size(); ++b)
    out_buffers.push_back({{"name", p.buffers[b].name},
                           {"kind", std::string(buffer_kind_name(p.buffers[b].kind))},
                           {"bytes", p.buffers[b].bytes()},
                           {"offset", p.plan.offsets[b]},
                           {"first", lives[b].first},
                           {"last", lives[b].last}});
  return {{"calls", calls},
          {"kernels", kernels},
          {"buffers", out_buffers},
          {"step_calls", step_calls(p)},
          {"arena_bytes", p.plan.arena_bytes},
          {"naive_bytes", p.plan.naive_bytes},
          {"in_place_reuses", p.plan.in_place_reuses}};
}

}  // namespace kiln::compiler
