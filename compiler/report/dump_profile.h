#pragma once
// `kiln profile ... --dump-dir DIR`: the profile's times recorded into the
// graph's dump (profile.json), so the page shows each kernel's and node's time.
#include <string>

#include "compiler/run_profile.h"
#include "compiler/schedule/program.h"

namespace kiln::compiler {

// Writes graph_dir/profile.json, {"runs": N, "call_ms": [ms per run, by call]},
// then the page again (write_dump_page). Throws kiln::Error as write_dump does.
void record_profile_in_dump(const std::string& graph_dir, const Program& p, const RunProfile& r);

}  // namespace kiln::compiler
