// `kiln opt FILE [--passes=a,b] [-o OUT] [--print-after-all] [--print-after=NAME]
//  [--print-before=NAME] [--time-passes]`.
#include <iostream>

#include "compiler/passes/pass_manager.h"
#include "engine/atomic_file.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "tools/cli_common.h"

namespace kiln::cli {

void opt(const OptOptions& opts) {
  const std::string text = print_kir(compiler::run_passes(parse_kir_file(opts.graph_path), opts.passes));
  if (opts.output_path.empty())
    std::cout << text;
  else
    write_file_atomically(opts.output_path, text);
}

}  // namespace kiln::cli
