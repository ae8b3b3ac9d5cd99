#pragma once
// The lowered program as data for the dump's page (program.json): its kernel
// calls, distinct kernels, buffers with their planned offsets and live ranges,
// and the plan's totals. program.txt and memory-plan.txt say the same in text.
#include <nlohmann/json.hpp>

#include "compiler/schedule/program.h"

namespace kiln::compiler {

// `compiled` is the graph `p` was built from (for the nodes' names).
nlohmann::json program_json(const Program& p, const Graph& compiled);

}  // namespace kiln::compiler
