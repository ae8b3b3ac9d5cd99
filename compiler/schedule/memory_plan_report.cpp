// `--print-memory-plan`: one row per buffer, then the summary line.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "compiler/schedule/lifetimes.h"
#include "compiler/schedule/memory_plan.h"

namespace kiln::compiler {

namespace {

// "512 B", "3.0 KiB", "12.5 MiB", "1.2 GiB".
std::string human_bytes(int64_t bytes) {
  if (bytes < 1024) return std::to_string(bytes) + " B";
  const char* units[] = {"KiB", "MiB", "GiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  for (; value >= 1024 && unit < 2; ++unit) value /= 1024;
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f %s", value, units[unit]);
  return buf;
}

// The operand whose range `w` took over at its birth, or -1.
int in_place_donor(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps,
                   const std::vector<Lifetime>& lives, const MemoryPlan& plan, int w) {
  if (buffers[w].external || buffers[w].bytes == 0) return -1;
  const int s = lives[w].first;
  for (const auto& [r, target] : steps[s].in_place)
    if (target == w && plan.offsets[r] == plan.offsets[w] && in_place_allowed(buffers, lives, s, r, w)) return r;
  return -1;
}

std::string live_range(const Lifetime& life, int steps) {
  if (life.first < 0) return "";
  return std::string("[") + std::to_string(life.first) + ", " +
         (life.last == steps ? "end" : std::to_string(life.last)) + "]";
}

std::string note(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps,
                 const std::vector<Lifetime>& lives, const MemoryPlan& plan, int b) {
  const int donor = in_place_donor(buffers, steps, lives, plan, b);
  std::string text;
  if (donor >= 0) {
    const int s = lives[b].first;
    text = "in-place on '" + buffers[donor].name + "' at step " + std::to_string(s) + " (" + steps[s].name + ")";
  }
  if (buffers[b].live_out) text += text.empty() ? "live-out" : ", live-out";
  return text;
}

}  // namespace

std::string memory_plan_report(const std::vector<PlanBuffer>& buffers, const std::vector<PlanStep>& steps,
                               const MemoryPlan& plan) {
  const std::vector<Lifetime> lives = compute_lifetimes(buffers, steps);
  const int n_steps = static_cast<int>(steps.size());
  size_t name_width = 6, scope_width = 5;
  for (const PlanBuffer& b : buffers) {
    name_width = std::max(name_width, b.name.size());
    scope_width = std::max(scope_width, b.scope.size());
  }
  // Names and scopes are padded by hand (they may be long); snprintf only formats the fixed-width columns.
  const auto pad = [](const std::string& text, size_t width) { return text + std::string(width - text.size(), ' '); };
  char row[128];
  std::snprintf(row, sizeof row, " %12s %12s  %-16s ", "bytes", "offset", "live");
  std::string out = pad("buffer", name_width) + row + pad("scope", scope_width) + " note\n";
  for (int b = 0; b < static_cast<int>(buffers.size()); ++b) {
    const PlanBuffer& buf = buffers[b];
    const std::string offset = buf.external ? "external" : std::to_string(plan.offsets[b]);
    std::snprintf(row, sizeof row, " %12lld %12s  %-16s ", static_cast<long long>(buf.bytes), offset.c_str(),
                  live_range(lives[b], n_steps).c_str());
    out += pad(buf.name, name_width) + row + pad(buf.scope, scope_width) + " " + note(buffers, steps, lives, plan, b);
    while (out.back() == ' ') out.pop_back();
    out += '\n';
  }
  const double saved = plan.naive_bytes > 0 ? 100.0 * (plan.naive_bytes - plan.arena_bytes) / plan.naive_bytes : 0;
  out += "memory: naive " + human_bytes(plan.naive_bytes) + " -> planned " + human_bytes(plan.arena_bytes) + " (" +
         std::to_string(std::lround(saved)) + "% less), " + std::to_string(plan.in_place_reuses) + " in-place reuse" +
         (plan.in_place_reuses == 1 ? "" : "s") + "\n";
  return out;
}

}  // namespace kiln::compiler
