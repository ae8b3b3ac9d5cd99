// kiln.import_onnx: runs the kiln-import program (as `kiln import` does: ONNX's
// protobuf and Debian's sentencepiece, which this module links, cannot share a
// process; tools/cmd_import.h) into a temporary directory, then loads the graph
// and the params it wrote.
#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>

#include <pybind11/stl.h>

#include "engine/ir/error.h"
#include "engine/ir/parser.h"
#include "engine/ir/read_file.h"
#include "engine/npy.h"
#include "tools/python/bindings.h"

extern char** environ;

namespace kiln::python {

namespace {

namespace fs = std::filesystem;

// KILN_IMPORT overrides the kiln-import built beside this module.
std::string import_program() {
  const char* env = std::getenv("KILN_IMPORT");
  return env && *env ? env : KILN_IMPORT_BINARY;
}

// A fresh directory in $TMPDIR (unset or empty: /tmp), removed with everything
// in it when this goes.
struct TempDir {
  fs::path path;
  TempDir() {
    const char* env = std::getenv("TMPDIR");
    const std::string parent = env && *env ? env : "/tmp";
    std::string pattern = (fs::path(parent) / "kiln-onnx-XXXXXX").string();
    if (!mkdtemp(pattern.data()))
      throw Error("import_onnx: cannot create a temporary directory in " + parent + (env && *env ? " (TMPDIR)" : "") +
                  ": " + std::strerror(errno));
    path = pattern;
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

// Runs `args` with stderr into `err_path` and its report on stdout dropped (it
// names the temporary files); returns its exit status.
int run(const std::vector<std::string>& args, const fs::path& err_path) {
  std::vector<char*> argv;
  for (const std::string& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
  posix_spawn_file_actions_addopen(&actions, 2, err_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  pid_t pid = 0;
  const int spawned = posix_spawn(&pid, argv[0], &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (spawned != 0) throw Error("import_onnx: cannot run " + args[0] + ": " + std::strerror(spawned));
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw Error("import_onnx: waiting for " + args[0] + ": " + std::strerror(errno));
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string dims_text(const std::vector<int64_t>& dims) {
  std::string text;
  for (int64_t d : dims) {
    if (!text.empty()) text += ',';
    text += std::to_string(d);
  }
  return text;
}

py::tuple import_onnx(const std::string& model, const std::map<std::string, int64_t>& dims,
                      const std::map<std::string, std::vector<int64_t>>& input_shapes) {
  const TempDir dir;
  const fs::path kir = dir.path / "model.kir", params = dir.path / "params", err = dir.path / "stderr";
  // The model after "--", so a path that starts with '-' is no flag. CLI11 2.1
  // lets a list flag (--dim) swallow "--", so a single-value flag comes last.
  std::vector<std::string> args = {import_program()};
  for (const auto& [name, value] : dims) args.push_back("--dim=" + name + "=" + std::to_string(value));
  for (const auto& [name, shape] : input_shapes) args.push_back("--input-shape=" + name + "=" + dims_text(shape));
  args.insert(args.end(), {"--output=" + kir.string(), "--params=" + params.string(), "--", model});
  if (run(args, err) != 0) {
    std::string message = read_file(err.string(), 1 << 20, "kiln-import's errors");
    while (!message.empty() && message.back() == '\n') message.pop_back();
    throw Error(message.empty() ? "import_onnx: kiln-import failed on " + model : message);
  }
  auto graph = std::make_shared<Graph>(parse_kir_file(kir.string()));
  py::dict values;
  if (!fs::exists(params)) return py::make_tuple(graph, values);  // kiln-import writes it only for a model with params
  for (const auto& entry : fs::directory_iterator(params))
    values[py::str(entry.path().stem().string())] = array_copy(load_npy(entry.path().string()));
  return py::make_tuple(graph, values);
}

}  // namespace

void define_onnx_import(py::module_& m) {
  m.def("import_onnx", &import_onnx, py::arg("model"), py::arg("dims") = std::map<std::string, int64_t>{},
        py::arg("input_shapes") = std::map<std::string, std::vector<int64_t>>{},
        "Imports an ONNX model as `kiln import` does: returns (graph, params), a kiln.Graph\n"
        "whose initializers are params and a dict of their values as numpy arrays.\n\n"
        "dims          values for symbolic input dims, by name ({'batch': 2})\n"
        "input_shapes  whole shapes of ONNX inputs, by name ({'x': [2, 5, 16]})\n\n"
        "kiln.Error with the command's message for a missing, truncated or non-ONNX file,\n"
        "ops kiln lacks (all of them, with their node names) or dims left without values.\n\n"
        "    g, params = kiln.import_onnx('mlp.onnx')\n"
        "    exe = kiln.compile(g)\n"
        "    for name, value in params.items(): exe.bind(name, value)");
}

}  // namespace kiln::python
