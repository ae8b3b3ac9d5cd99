#include "tools/dot_marks.h"

#include <algorithm>
#include <cstdio>
#include <iterator>
#include <map>

namespace kiln::cli {
namespace {

std::string hex_colour(int r, int g, int b) {
  char text[8];
  std::snprintf(text, sizeof text, "#%02x%02x%02x", r, g, b);
  return text;
}

// Light, distinguishable fills, reused in turn.
const char* const kPalette[] = {"#a6cee3", "#b2df8a", "#fb9a99", "#fdbf6f", "#cab2d6", "#ffff99",
                                "#8dd3c7", "#bebada", "#fb8072", "#80b1d3", "#fdb462", "#b3de69"};

std::string size_text(int64_t bytes) {
  char text[32];
  if (bytes >= (int64_t{1} << 20))
    std::snprintf(text, sizeof text, "%.1f MiB", static_cast<double>(bytes) / (1 << 20));
  else
    std::snprintf(text, sizeof text, "%.1f KiB", static_cast<double>(bytes) / 1024);
  return text;
}

}  // namespace

DotMarks buffer_marks(const compiler::CompiledGraph& c) {
  const compiler::Program& p = c.program;
  DotMarks marks;
  std::map<int64_t, std::string> colour_of_offset;
  for (const compiler::KernelCall& call : p.calls) {
    if (call.args.size() <= call.num_inputs) continue;
    int b = call.args[call.num_inputs];
    const compiler::ProgramBuffer& buf = p.buffers[static_cast<size_t>(b)];
    DotMark& mark = marks[call.node];
    if (buf.kind == compiler::BufferKind::temp && buf.alias < 0) {
      const int64_t offset = p.plan.offsets[static_cast<size_t>(b)];
      auto [it, added] = colour_of_offset.emplace(offset, "");
      if (added) it->second = kPalette[(colour_of_offset.size() - 1) % std::size(kPalette)];
      mark = {"arena @" + std::to_string(offset) + ", " + size_text(buf.bytes()), it->second};
    } else if (buf.alias >= 0) {
      mark.note = "in place of %" + p.buffers[static_cast<size_t>(buf.alias)].name;
    } else if (buf.kind == compiler::BufferKind::invariant) {
      mark.note = "invariant %" + buf.name + " (made once per binding of the params)";
    } else {
      mark.note = "output %" + buf.name;
    }
  }
  return marks;
}

DotMarks time_marks(const compiler::CompiledGraph& c, const compiler::RunProfile& r) {
  const compiler::Program& p = c.program;
  std::map<size_t, double> ms;  // by node
  double total = 0;
  for (const compiler::CallSpan& span : r.calls) {
    ms[p.calls[span.call].node] += span.ms();
    total += span.ms();
  }
  double most = 0;
  for (const auto& [node, t] : ms) most = std::max(most, t);
  DotMarks marks;
  const double runs = std::max(r.runs, 1);
  for (const auto& [node, t] : ms) {
    const int shade = most > 0 ? static_cast<int>(255 * (1 - t / most)) : 255;
    char note[64];
    std::snprintf(note, sizeof note, "%.3f ms (%.1f%%)", t / runs, total > 0 ? 100 * t / total : 0.0);
    marks[node] = {note, hex_colour(255, shade, shade)};
  }
  return marks;
}

}  // namespace kiln::cli
