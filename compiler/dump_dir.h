#pragma once
// --dump-dir DIR (XLA's --xla_dump_to): every stage of each graph compiled, as
// files a reader can diff. One directory per compile of a graph:
//   DIR/NAME/           the first compile of graph @NAME in this process; then
//   DIR/NAME.2/, ...    the next ones (a training run's bucket shapes: each
//                       00-input.kir declares its shapes)
// holding
//   00-input.kir, 01-PASS.kir, ...   the graph before the passes and after each
//   NN-PASS.decisions.txt            a pass's remarks (fusion: why each producer
//                                    left out of a fusion was left out)
//   program.txt, memory-plan.txt     the kernel calls over buffers; the arena
//   kernels/kN-KIND.ll               kernel kN of program.txt as lowered,
//   kernels/kN-KIND.opt.ll, .s       after LLVM's pipeline, and its assembly
// A directory of an earlier process's dump is overwritten file by file.
#include <string>

namespace kiln::compiler {

// The directory for this compile of graph `graph_name` under `root`, created
// (with `root`); characters other than letters, digits, _ and - become _.
// Throws kiln::Error naming the path if it cannot be. Thread-safe.
std::string graph_dump_dir(const std::string& root, const std::string& graph_name);

// Writes `text` as dir/file, replacing a previous dump's file whole.
void write_dump(const std::string& dir, const std::string& file, const std::string& text);

}  // namespace kiln::compiler
