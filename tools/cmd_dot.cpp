#include <iostream>

#include "engine/ir/dot.h"
#include "engine/ir/error.h"
#include "engine/ir/parser.h"
#include "tools/cli_common.h"
#include "tools/dot_marks.h"

namespace kiln::cli {

void dot(const DotOptions& opts) {
  Graph g = parse_kir_file(opts.graph_path);
  if (opts.color_by == "time") {
    const auto exe = profiled_runs(std::move(g), ProfileOptions{});
    std::cout << to_dot(exe->compiled().graph, time_marks(exe->compiled(), exe->run_profile()));
  } else if (opts.color_by == "buffer") {
    const compiler::CompiledGraph c = compiler::compile_graph(g);
    std::cout << to_dot(c.graph, buffer_marks(c));
  } else if (opts.fuse) {
    std::cout << to_dot(compiler::compile_graph(g).graph);
  } else {
    std::cout << to_dot(g);
  }
}

}  // namespace kiln::cli
