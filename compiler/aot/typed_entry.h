#pragma once
// PREFIX_run, the typed entry point of an AOT object (its C declaration and
// contract are in the generated header, c_header.h): an LLVM function added to
// the lowered module that builds the raw entry's buffer table from the argument
// struct and the workspace (aot_interface.h says where each buffer lives),
// calls the raw entry, copies values shown in more than one field, and returns
// the status word. The raw entry and every kernel become internal, so
// PREFIX_run is the object's only global definition and objects of several
// graphs link together.
#include "compiler/aot/aot_interface.h"
#include "compiler/codegen/lower_program.h"
#include "compiler/target/target.h"

namespace kiln::compiler {

// `lowered` is `g` lowered for `target` (not yet optimized).
void add_typed_entry(LoweredProgram& lowered, const Graph& g, const AotInterface& api, const Target& target);

}  // namespace kiln::compiler
