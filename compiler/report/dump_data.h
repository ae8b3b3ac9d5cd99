#pragma once
// Reads one graph's dump directory (compiler/dump_dir.h) into the data the page
// shows. Every file is optional but the graph's stages: a dump of `kiln opt`
// has no program, one without `kiln profile` no profile.
#include <string>

#include <nlohmann/json.hpp>

namespace kiln::compiler {

// {"name", "stages": [STAGE], "texts": [...], "remarks": [{"stage", "text"}],
//  "program" (program.json), "profile" (profile.json)}
// STAGE: {"file", "pass", "ms", "nodes_before", "nodes_after", "changed" (passes.json),
//         then stage_json's fields, each node with its "source" (file:line:col) where
//         passes.json has one, or "same": the earlier stage whose text it repeats}
// Throws kiln::Error naming a file that cannot be read or parsed.
nlohmann::json graph_dump_data(const std::string& graph_dir);

// Each kernel's files: {"0": {"ll", "opt.ll", "s"}, ...} by kernel number
// (kernels/kN-LABEL.*, whatever the label).
nlohmann::json kernel_files_data(const std::string& graph_dir);

}  // namespace kiln::compiler
