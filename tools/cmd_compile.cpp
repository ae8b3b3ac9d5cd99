// `kiln compile FILE --emit llvm|asm|obj -o OUT [--target-cpu CPU] [--time-passes]`.
#include <cstdio>

#include "compiler/emit_file.h"
#include "engine/ir/parser.h"
#include "engine/atomic_file.h"
#include "tools/cli_common.h"

namespace kiln::cli {

void compile(const CompileOptions& opts) {
  const Graph g = parse_kir_file(opts.graph_path);
  const compiler::Target target = compiler::detect_target(opts.target_cpu);
  compiler::CompileTimes times;
  const std::string out = compiler::emit_graph(g, target, compiler::parse_emit_kind(opts.emit), "kiln_main", &times);
  write_file_atomically(opts.output_path, out);
  if (opts.time_passes) std::fputs(compiler::time_passes_report(times, target).c_str(), stderr);
}

}  // namespace kiln::cli
