#include "compiler/report/dump_profile.h"

#include <nlohmann/json.hpp>

#include "compiler/dump_dir.h"
#include "compiler/report/dump_page.h"

namespace kiln::compiler {

void record_profile_in_dump(const std::string& graph_dir, const Program& p, const RunProfile& r) {
  std::vector<double> call_ms(p.calls.size(), 0.0);
  for (const CallSpan& span : r.calls) call_ms.at(span.call) += span.ms();
  if (r.runs > 0)
    for (double& ms : call_ms) ms /= r.runs;
  write_dump(graph_dir, "profile.json", nlohmann::json({{"runs", r.runs}, {"call_ms", call_ms}}).dump() + "\n");
  write_dump_page(graph_dir);
}

}  // namespace kiln::compiler
