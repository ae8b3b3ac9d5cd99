#include "tools/onnx_import/cmd_import.h"

#include <CLI/CLI.hpp>

#include <charconv>
#include <filesystem>
#include <iostream>
#include <optional>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/ir/printer.h"
#include "engine/npy.h"
#include "tools/onnx_import/import.h"
#include "tools/onnx_import/import_report.h"
#include "tools/flag_checks.h"
#include "tools/output_file.h"
#include "tools/same_file.h"

namespace kiln::cli {

namespace {

namespace fs = std::filesystem;

int64_t parse_dim(std::string_view text, const std::string& arg) {
  int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0)
    throw Error("'" + arg + "': '" + std::string(text) + "' is not a dim (an integer >= 0)");
  return v;
}

std::pair<std::string, std::string> split_name(const std::string& arg, const char* form) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0) throw Error("'" + arg + "' is not " + form);
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

std::pair<std::string, int64_t> parse_dim_flag(const std::string& arg) {
  const auto [name, value] = split_name(arg, "NAME=N");
  return {name, parse_dim(value, arg)};
}

// "x=2,3,4"; "x=" is a scalar.
std::pair<std::string, Shape> parse_shape_flag(const std::string& arg) {
  const auto [name, dims] = split_name(arg, "NAME=D0,D1,...");
  Shape shape;
  for (size_t begin = 0; begin < dims.size();) {
    const size_t comma = std::min(dims.find(',', begin), dims.size());
    shape.push_back(parse_dim(std::string_view(dims).substr(begin, comma - begin), arg));
    begin = comma + 1;
  }
  return {name, shape};
}

onnx::ImportOptions import_options(const ImportOptions& opts) {
  onnx::ImportOptions o;
  for (const std::string& arg : opts.dims) {
    const auto [name, value] = parse_dim_flag(arg);
    if (!o.dims.emplace(name, value).second) throw Error("--dim " + name + " is given twice");
  }
  for (const std::string& arg : opts.input_shapes) {
    auto [name, shape] = parse_shape_flag(arg);
    if (!o.input_shapes.emplace(name, std::move(shape)).second)
      throw Error("--input-shape " + name + " is given twice");
  }
  return o;
}

// Creates DIR with its missing parents, and removes those again (they are empty:
// the atomic writes leave nothing behind) unless the writes succeeded and keep() was called.
class NewDirectories {
 public:
  NewDirectories(const fs::path& dir, const std::string& flag) {
    for (fs::path p = dir; !p.empty() && !fs::exists(p); p = p.parent_path()) created_.push_back(p);
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) throw Error(flag + " " + dir.string() + ": " + ec.message());
  }
  NewDirectories(const NewDirectories&) = delete;
  NewDirectories& operator=(const NewDirectories&) = delete;
  ~NewDirectories() {
    std::error_code ec;
    for (const fs::path& p : created_) fs::remove(p, ec);  // deepest first
  }
  void keep() { created_.clear(); }

 private:
  std::vector<fs::path> created_;
};

}  // namespace

void add_import_flags(CLI::App& app, ImportOptions& opts) {
  CLI::App* cmd = &app;
  cmd->add_option("MODEL", opts.model_path, "the .onnx file")->required();
  cmd->add_option("-o,--output", opts.output_path,
                  "the .kir file to write (-: stdout, and what was imported to stderr)")
      ->required();
  cmd->add_option("--params", opts.params_dir,
                  "where to write each param and state as NAME.npy, for kiln run --load (default: OUT with the "
                  "extension .params; needed with -o - for a model with params)");
  cmd->add_option("--dim", opts.dims, "a value for the symbolic input dims named NAME")
      ->check(parses_as(parse_dim_flag, "NAME=N"));
  cmd->add_option("--input-shape", opts.input_shapes, "the whole shape of the ONNX input NAME")
      ->check(parses_as(parse_shape_flag, "NAME=D0,D1,..."));
}

void import_onnx(const ImportOptions& opts) {
  const onnx::ImportedModel m = onnx::import_model(opts.model_path, import_options(opts));
  const bool to_stdout = opts.output_path == "-";
  if (to_stdout && !m.tensors.empty() && opts.params_dir.empty())
    throw Error("-o -: " + opts.model_path + " has " + std::to_string(m.tensors.size()) +
                " params and state, which go to files: name their directory with --params DIR");
  const std::string params_dir =
      opts.params_dir.empty() ? fs::path(opts.output_path).replace_extension(".params").string() : opts.params_dir;

  // A file this import writes must not be the model it reads (`-o m.onnx` would
  // replace the model by its text), by any name (tools/same_file.h).
  check_output_is_no_input({"-o", opts.output_path}, {{"MODEL", opts.model_path}});
  const std::string graph_text = print_kir(m.graph);
  std::vector<FileBytes> files;
  if (!to_stdout) files.push_back({opts.output_path, graph_text});
  for (const auto& [name, t] : m.tensors) {
    files.push_back({(fs::path(params_dir) / (name + ".npy")).string(), npy_header(t), tensor_bytes(t)});
    check_output_is_no_input({"--params", files.back().path}, {{"MODEL", opts.model_path}});
  }
  std::optional<NewDirectories> new_params_dir;
  if (!m.tensors.empty()) new_params_dir.emplace(params_dir, "--params");
  if (!files.empty()) write_files_atomically(files);  // the graph and its params, all or none
  if (new_params_dir) new_params_dir->keep();
  if (to_stdout) write_output("-", graph_text);

  std::ostream& report = to_stdout ? std::cerr : std::cout;  // stdout has the graph
  report << onnx::import_report(m) << (to_stdout ? "stdout" : opts.output_path);
  if (!m.tensors.empty())
    report << " and " << m.tensors.size() << " tensors in " << params_dir << "/ (kiln run "
           << (to_stdout ? "FILE.kir" : opts.output_path) << " --load " << params_dir << ")";
  report << '\n';
}

}  // namespace kiln::cli
