// The CMake package: `cmake --install` of this build into a fresh prefix, then a
// project outside kiln (tests/package/consumer) found with find_package(kiln),
// linked to kiln::kiln, built and run.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cli/temp_dir.h"

namespace fs = std::filesystem;

namespace {

// Runs a shell command, its output to `log`; true if it exits 0.
bool sh(const std::string& cmd, const std::string& log) { return std::system((cmd + " > '" + log + "' 2>&1").c_str()) == 0; }

std::string text_of(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("an installed kiln is found by find_package(kiln) and a project linking kiln::kiln builds and runs") {
  TempDir tmp;
  const std::string build_dir = fs::path(KILN_BINARY).parent_path().string();
  const std::string prefix = tmp.file("prefix"), consumer = tmp.file("consumer"), log = tmp.file("log");
  INFO("log: ", text_of(log));
  REQUIRE(sh("cmake --install '" + build_dir + "' --prefix '" + prefix + "'", log));
  CHECK(fs::exists(prefix + "/bin/kiln"));
  CHECK(fs::exists(prefix + "/include/kiln/engine/ir/graph.h"));
  CHECK(fs::exists(prefix + "/lib/cmake/kiln/kilnConfig.cmake"));
  CHECK(!fs::exists(prefix + "/include/kiln/engine/ir/graph.cpp"));  // headers only
  // The tool component alone (tools/run_examples.sh installs it): the commands and,
  // where this build has it, the Python module, which python3 imports from there.
  const std::string tool = tmp.file("tool");
  REQUIRE(sh("cmake --install '" + build_dir + "' --component tool --prefix '" + tool + "'", log));
  CHECK(fs::exists(tool + "/bin/kiln"));
  CHECK(fs::exists(tool + "/bin/kiln-import"));
  CHECK(!fs::exists(tool + "/include"));
  if (fs::exists(build_dir + "/python")) {
    std::string module_dir;
    for (const auto& e : fs::recursive_directory_iterator(tool))
      if (e.path().filename().string().rfind("kiln.", 0) == 0 && e.path().extension() == ".so")
        module_dir = e.path().parent_path().string();
    REQUIRE(module_dir.find("/dist-packages") != std::string::npos);
    CHECK(sh("cd / && PYTHONPATH='" + module_dir + "' /usr/bin/python3 -c 'import kiln; print(kiln.__file__)'", log));
    CHECK(text_of(log).find(module_dir) != std::string::npos);
  }

  const bool configured = sh("cmake -S '" + std::string(KILN_SOURCE_DIR) + "/tests/package/consumer' -B '" + consumer +
                                 "' -G Ninja -DCMAKE_PREFIX_PATH='" + prefix + "'",
                             log);
  REQUIRE(configured);
  const bool built = sh("cmake --build '" + consumer + "'", log);
  REQUIRE(built);
  const std::string out = tmp.file("out");
  REQUIRE(sh("'" + consumer + "/consumer' '" + std::string(KILN_SOURCE_DIR) + "/examples/mlp.kir'", out));
  const std::string printed = text_of(out);
  CHECK(printed.find("%loss: f32[], jit - interp: ") != std::string::npos);
  CHECK(printed.find("%logits: f32[8,4], jit - interp: ") != std::string::npos);
}
