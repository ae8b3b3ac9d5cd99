#pragma once
// `kiln import MODEL.onnx -o OUT.kir [--params DIR] [--dim NAME=N]... [--input-shape NAME=D0,D1,...]...`:
// an ONNX model as a .kir graph plus its params (and any state) as DIR/NAME.npy,
// the files `kiln run OUT.kir --load DIR` reads (tools/onnx_import/import.h).
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace kiln::cli {

struct ImportOptions {
  std::string model_path;
  std::string output_path;
  std::string params_dir;                // empty: OUT with the extension .params
  std::vector<std::string> dims;         // "NAME=N"
  std::vector<std::string> input_shapes;  // "NAME=D0,D1,..."
};

// Adds the flags to `app`, filling `opts`. Malformed --dim and --input-shape
// values are flag errors (exit 2).
void add_import_flags(CLI::App& app, ImportOptions& opts);

// Imports the model, then writes OUT.kir and DIR/NAME.npy all or none
// (engine/atomic_file.h); any error leaves nothing written. Prints the import report.
void import_onnx(const ImportOptions& opts);

}  // namespace kiln::cli
