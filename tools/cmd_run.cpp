#include <charconv>
#include <filesystem>
#include <iostream>
#include <memory>
#include <set>

#include "compiler/backend.h"
#include "compiler/runtime/mpi_job.h"
#include "engine/ir/error.h"
#include "engine/ir/parser.h"
#include "engine/atomic_file.h"
#include "engine/npy.h"
#include "engine/param_init.h"
#include "engine/tensor/collectives.h"
#include "tools/cli_common.h"
#include "tools/same_file.h"

namespace kiln::cli {
namespace {

namespace fs = std::filesystem;

void require_inputs_bound(const Executable& exe) {
  std::string missing;
  for (Value v : exe.graph().declarations(ValueKind::input)) {
    const std::string& name = exe.graph().name_of(v);
    if (exe.is_bound(name)) continue;
    if (!missing.empty()) missing += ", ";
    missing += "%" + name;
  }
  if (!missing.empty()) throw Error("input " + missing + " not bound (pass --input NAME=FILE.npy)");
}

std::string scalar_text(const Tensor& t) {
  return t.visit([](const auto& a) -> std::string {
    const auto v = a.flat(0);
    if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bool>) {
      return v ? "true" : "false";
    } else if constexpr (std::is_same_v<std::decay_t<decltype(v)>, bfloat16>) {
      char buf[32];
      return std::string(buf, std::to_chars(buf, buf + sizeof buf, static_cast<float>(v)).ptr);
    } else {
      char buf[32];
      return std::string(buf, std::to_chars(buf, buf + sizeof buf, v).ptr);
    }
  });
}

void write_outputs(const Executable& exe, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("--output-dir " + dir + ": " + ec.message());
  std::vector<FileBytes> files;
  for (const std::string& name : exe.output_names()) {
    if (exe.output(name).dtype() == DType::bf16)
      throw Error("output %" + name + " is bf16, which numpy and .npy do not have: cast it to f32 in the graph");
    files.push_back({(fs::path(dir) / (name + ".npy")).string(), npy_header(exe.output(name)),
                     tensor_bytes(exe.output(name))});
  }
  write_files_atomically(files);  // all outputs or none
  for (const std::string& name : exe.output_names()) {
    const Tensor& t = exe.output(name);
    std::cout << '%' << name << " : " << type_str(t.type());
    if (t.type().rank() == 0) std::cout << " = " << scalar_text(t);
    std::cout << " -> " << (fs::path(dir) / (name + ".npy")).string() << '\n';
  }
}

// The graph's params and state, the tensors --load and --save move.
std::vector<std::string> persistent_names(const Graph& g) {
  std::vector<std::string> names;
  for (Value v : g.declarations())
    if (g.value(v).kind != ValueKind::input) names.push_back(g.name_of(v));
  return names;
}

void load_persistent(Executable& exe, const std::string& dir) {
  for (const std::string& name : persistent_names(exe.graph())) {
    const fs::path path = fs::path(dir) / (name + ".npy");
    if (!fs::exists(path)) continue;
    try {
      exe.bind(name, load_npy(path.string()));
    } catch (const Error& e) {
      throw Error("--load " + dir + ": " + e.what());
    }
  }
}

void save_persistent(const Executable& exe, const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("--save " + dir + ": " + ec.message());
  std::vector<FileBytes> files;
  for (const std::string& name : persistent_names(exe.graph()))
    files.push_back({(fs::path(dir) / (name + ".npy")).string(), npy_header(exe.binding(name)),
                     tensor_bytes(exe.binding(name))});
  write_files_atomically(files);
}

// No file run writes (an output, a --save file) is FILE or an --input file. (--save
// may be --load: a training loop's params go back where they came from.)
void check_outputs_are_no_inputs(const Executable& exe, const RunOptions& opts) {
  std::vector<FlagPath> inputs{{"FILE", opts.graph_path}};
  for (const std::string& arg : opts.inputs) {
    const auto [name, path] = split_binding(arg);
    inputs.push_back({"--input " + name + "=", path});
  }
  for (const std::string& name : exe.output_names())
    check_output_is_no_input({"--output-dir's", (fs::path(opts.output_dir) / (name + ".npy")).string()}, inputs);
  if (opts.save_dir.empty()) return;
  for (const std::string& name : persistent_names(exe.graph()))
    check_output_is_no_input({"--save", (fs::path(opts.save_dir) / (name + ".npy")).string()}, inputs);
}

// "step 3: loss=0.25 lr=0.001": the scalar outputs after each run.
void print_step(const Executable& exe, int64_t step) {
  std::cout << "step " << step << ':';
  for (const std::string& name : exe.output_names())
    if (exe.output(name).type().rank() == 0) std::cout << ' ' << name << '=' << scalar_text(exe.output(name));
  std::cout << '\n';
}

}  // namespace

std::pair<std::string, std::string> split_binding(const std::string& arg) {
  const size_t eq = arg.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == arg.size())
    throw Error("'" + arg + "' is not NAME=PATH.npy");
  return {arg.substr(0, eq), arg.substr(eq + 1)};
}

// The name is checked before the file is read, so a typo in NAME is reported as such.
void bind_inputs(Executable& exe, const std::vector<std::string>& args) {
  const Graph& g = exe.graph();
  std::set<std::string> seen;
  for (const std::string& arg : args) {
    const auto [name, path] = split_binding(arg);
    if (!seen.insert(name).second) throw Error("--input " + name + " is given twice");
    const auto v = g.find(name);
    if (!v || g.value(*v).kind == ValueKind::result)
      throw Error("--input " + arg + ": graph @" + g.name() + " declares no input, param or state named '" + name + "'");
    Tensor t = load_npy(path);
    try {
      exe.bind(name, std::move(t));
    } catch (const Error& e) {
      throw Error("--input " + arg + ": " + e.what());
    }
  }
}

// Everything that can fail on user input happens before the first output is written.
// Under mpirun every rank runs the graph (its allreduces sum over the ranks);
// rank 0 alone prints and writes.
void run(const RunOptions& opts) {
  if (compiler::mpirun_ranks() > 0) compiler::start_mpi_job();
  const bool writes = collectives().rank() == 0;
  auto exe = compiler::make_executable(parse_kir_file(opts.graph_path), opts.exec);
  check_outputs_are_no_inputs(*exe, opts);
  if (!opts.load_dir.empty()) load_persistent(*exe, opts.load_dir);
  bind_inputs(*exe, opts.inputs);
  require_inputs_bound(*exe);
  bind_initial_values(*exe, opts.seed);
  for (int64_t step = 1; step <= opts.steps; ++step) {
    exe->run();
    if (opts.steps > 1 && writes) print_step(*exe, step);
  }
  if (!writes) return;
  write_outputs(*exe, opts.output_dir);
  if (!opts.save_dir.empty()) save_persistent(*exe, opts.save_dir);
}

}  // namespace kiln::cli
