#pragma once
// `kiln dot --color-by`: marks (engine/ir/dot.h) on a compiled graph's kernels.
#include "compiler/pipeline.h"
#include "compiler/run_profile.h"
#include "engine/ir/dot.h"

namespace kiln::cli {

// Each kernel's first result's buffer: its arena offset and size, one colour per
// offset (kernels whose results reuse the same bytes share it); outputs and
// in-place updates of params and state are named, uncoloured.
DotMarks buffer_marks(const compiler::CompiledGraph& c);

// Each kernel's time per run and share of the run, white (none) to red (the most).
DotMarks time_marks(const compiler::CompiledGraph& c, const compiler::RunProfile& r);

}  // namespace kiln::cli
