#pragma once
// An unfused concat: each operand's rows copied into place from memory, one
// memcpy per (result row, operand), driven by a loop over a constant table of
// {argument slot, bytes per row, byte offset in the result row} per operand.
// The code is the same size for 2 operands or 100,000; the elemental concat
// (shape_emitters.cpp) instead branches among every operand at every element,
// which is why a fusion takes at most kMaxFusedConcatOperands of them
// (engine/ir/fusion_kind.h).
#include <cstddef>
#include <string>

#include "compiler/codegen/lowering_context.h"
#include "engine/ir/graph.h"

namespace kiln::compiler {

// Whether `k` is one concat node reading kernel inputs only, and outputting its result.
bool is_lone_concat(const Graph& k);

// Emits the copies of the lone concat kernel `k` at the builder's position.
void emit_concat_copies(LoweringContext& cx, const Graph& k, const std::string& symbol);

}  // namespace kiln::compiler
