#pragma once
// What `kiln import` prints: the graph's inputs and outputs with their kiln
// types, the params and state with their element counts, and the ONNX ops
// imported with their counts and how many nodes were folded at import.
#include <string>

#include "tools/onnx_import/import.h"

namespace kiln::onnx {

std::string import_report(const ImportedModel& m);

}  // namespace kiln::onnx
