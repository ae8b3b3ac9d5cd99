#include "compiler/aot/emit_aot.h"

#include "compiler/aot/aot_interface.h"
#include "compiler/aot/c_header.h"
#include "compiler/aot/typed_entry.h"
#include "compiler/codegen/lower_graph.h"
#include "compiler/emit_file.h"

namespace kiln::compiler {

AotFiles emit_aot(const Graph& g, const Target& target, const std::string& prefix, CompileTimes* times) {
  CompileTimes local;
  CompileTimes& t = times ? *times : local;
  const AotInterface api = aot_interface(g, prefix);
  LoweredGraph lowered = lower_graph(g, target);
  t.lower_ms += lowered.lower_ms;
  add_typed_entry(lowered, g, api, target);
  return {emit_module(lowered, target, EmitKind::object, t), c_header(g, api, target)};
}

}  // namespace kiln::compiler
