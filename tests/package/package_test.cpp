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
