#pragma once
// The C header of an AOT-compiled graph (`kiln compile --emit obj --header H`):
// the documented entry point PREFIX_run, its argument struct and the size
// constants, generated from the same AotInterface the object was built with.
#include <string>

#include "compiler/aot/aot_interface.h"
#include "compiler/target/target.h"
#include "engine/ir/graph.h"

namespace kiln::compiler {

// The header's text; `target` is what the object was compiled for (named in the
// header, as the object runs only on CPUs with those features).
std::string c_header(const Graph& g, const AotInterface& api, const Target& target);

}  // namespace kiln::compiler
