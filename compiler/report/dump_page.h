#pragma once
// The dump as a page: --dump-dir DIR writes DIR/index.html, which a browser
// opens from the file system (no server, no network). It shows every graph
// dumped under DIR: the pipeline, each stage's graph laid out by Graphviz
// (WebAssembly, embedded), the fusion decisions and other remarks, the
// program's kernels with their LLVM IR and assembly, the memory plan, and the
// profile where `kiln profile` recorded one.
//
// Each graph's data is a script beside its dump, loaded when the page shows it:
//   DIR/NAME/page-data.js      the stages, remarks, program and profile
//   DIR/NAME/page-kernels/kN.js  kernel kN's .ll, .opt.ll and .s, loaded when
//                                it is first opened (all of a base step's: 18 MB)
#include <string>

namespace kiln::compiler {

// Writes graph_dir's scripts from the files its dump holds, then its parent's
// index.html listing every graph dumped there. Called at the end of each dump
// (once its kernels are written) and after a profile is recorded into it.
// Thread-safe. Throws kiln::Error naming a file it cannot read or write.
void write_dump_page(const std::string& graph_dir);

}  // namespace kiln::compiler
