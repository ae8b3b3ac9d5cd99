// `kiln opt FILE [--passes=a,b] [-o OUT] [--print-after-all] [--print-after=NAME]
//  [--print-before=NAME] [--print-changed] [--time-passes] [--dump-dir DIR]`.
#include "compiler/dump_dir.h"
#include "compiler/pipeline.h"
#include "compiler/report/dump_page.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "tools/cli_common.h"
#include "tools/output_file.h"
#include "tools/same_file.h"

namespace kiln::cli {

void opt(const OptOptions& opts) {
  check_output_is_no_input({"-o", opts.output_path}, {{"FILE", opts.graph_path}});
  const Graph graph = parse_kir_file(opts.graph_path);
  compiler::PassOptions passes = opts.passes;
  if (!opts.dump_dir.empty()) passes.dump_dir = compiler::graph_dump_dir(opts.dump_dir, graph.name());
  const Graph optimized = compiler::run_pipeline_passes(graph, passes);
  if (!passes.dump_dir.empty()) compiler::write_dump_page(passes.dump_dir);
  write_output(opts.output_path, print_kir(optimized));
}

}  // namespace kiln::cli
