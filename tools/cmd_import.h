#pragma once
// `kiln import ...` runs `kiln-import ...` (tools/onnx_import/), found beside the
// kiln binary, in its place. ONNX import is a program of its own because Debian's
// libsentencepiece0, which kiln links for its tokenizers, exports the
// protobuf-lite it bundles, and in a process that loads both, libprotobuf's
// calls bind to those symbols and crash at start-up.
#include <string>
#include <vector>

namespace kiln::cli {

// Replaces this process with kiln-import and `args`; throws kiln::Error if it cannot.
void exec_import(const std::vector<std::string>& args);

}  // namespace kiln::cli
