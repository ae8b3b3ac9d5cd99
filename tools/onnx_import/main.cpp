// kiln-import: `kiln import` (tools/cmd_import.h says why it is a program of its
// own). Exit codes as kiln's: 0 success, 1 a bad model or file, 2 bad flags.
#include <CLI/CLI.hpp>
#include <iostream>
#include <new>

#include "engine/tensor/memory_check.h"
#include "ops/register_all.h"
#include "tools/onnx_import/cmd_import.h"
#include "tools/usage_errors.h"

int main(int argc, char** argv) {
  kiln::register_all_ops();
  CLI::App app{"kiln import: an ONNX model as a .kir graph and its params as .npy files", "kiln import"};
  kiln::cli::ImportOptions opts;
  kiln::cli::add_import_flags(app, opts);
  try {
    app.parse(argc, argv);
  } catch (const CLI::Success& e) {  // --help
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    const std::string unknown = kiln::cli::unknown_flag_message(app, {argv + 1, argv + argc});
    std::cerr << "kiln: error: " << (unknown.empty() ? std::string(e.what()) : unknown) << '\n'
              << kiln::cli::help_hint("kiln import") << '\n';
    return 2;
  }
  try {
    kiln::cli::import_onnx(opts);
  } catch (const std::bad_alloc&) {  // the last line, as in kiln's main
    std::cerr << "kiln: error: " << kiln::out_of_memory_message() << '\n';
    return 1;
  } catch (const std::exception& e) {
    std::cerr << "kiln: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
