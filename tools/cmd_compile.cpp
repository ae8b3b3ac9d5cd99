// `kiln compile FILE --emit llvm|asm|obj -o OUT [--header OUT.h] [--entry NAME]
//  [--target-cpu CPU] [--time-passes]`.
#include <cstdio>
#include <filesystem>

#include "compiler/aot/aot_interface.h"
#include "compiler/aot/emit_aot.h"
#include "compiler/emit_file.h"
#include "engine/atomic_file.h"
#include "engine/ir/parser.h"
#include "tools/cli_common.h"
#include "tools/output_file.h"
#include "tools/same_file.h"

namespace kiln::cli {

void compile(const CompileOptions& opts) {
  if (!opts.header_path.empty() && std::filesystem::weakly_canonical(opts.header_path) ==
                                       std::filesystem::weakly_canonical(opts.output_path))
    throw Error("--header " + opts.header_path + " is the object file -o " + opts.output_path +
                ": the header would overwrite it");
  check_output_is_no_input({"-o", opts.output_path}, {{"FILE", opts.graph_path}});
  if (!opts.header_path.empty()) check_output_is_no_input({"--header", opts.header_path}, {{"FILE", opts.graph_path}});
  const Graph g = parse_kir_file(opts.graph_path);
  const compiler::Target target = compiler::detect_target(opts.target_cpu);
  compiler::CompileTimes times;
  if (opts.header_path.empty()) {
    const std::string entry = opts.entry.empty() ? "kiln_main" : opts.entry;
    const std::string out =
        compiler::emit_graph(g, target, compiler::parse_emit_kind(opts.emit), entry, &times, opts.pipeline);
    write_output(opts.output_path, out);
  } else {
    const std::string prefix = opts.entry.empty() ? compiler::default_aot_prefix(g) : opts.entry;
    const compiler::AotFiles files = compiler::emit_aot(g, target, prefix, &times, opts.pipeline);
    write_files_atomically({{opts.output_path, files.object}, {opts.header_path, files.header}});
  }
  if (opts.pipeline.passes.time_passes) std::fputs(compiler::time_passes_report(times, target).c_str(), stderr);
}

}  // namespace kiln::cli
