// kiln run --check-numerics: the first nan or +inf stops the run, named with the
// value, the kernel or node that made it, its model scopes and its .kir line, on both backends.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <limits>

#include "cli/run_kiln.h"
#include "engine/npy.h"

using namespace kiln;

namespace {

// sqrt of a negative input makes a nan at [1]; exp keeps it (and the JIT fuses
// the two into one kernel whose result is %y).
constexpr const char* kSqrtExp = R"kir(graph @g {
  input %x : f32[4]
  %s = sqrt(%x) : f32[4] loc("enc.0.ffn")
  %y = exp(%s) : f32[4] loc("enc.0.ffn (backward)")
  output %y
}
)kir";

struct Files {
  TempDir dir;
  std::string kir = dir.file("g.kir");
  Files(const std::vector<float>& x, const char* text = kSqrtExp) {
    std::ofstream(kir) << text;
    auto a = Tensor::F32::from_shape({4});
    for (size_t i = 0; i < 4; ++i) a(i) = x[i];
    save_npy(dir.file("x.npy"), Tensor(std::move(a)));
  }
  std::vector<std::string> run(const std::string& backend, bool check) const {
    std::vector<std::string> args = {"run", kir, "--input", "x=" + dir.file("x.npy"), "--output-dir", dir.file("out"),
                                     "--backend", backend};
    if (check) args.push_back("--check-numerics");
    return args;
  }
};

}  // namespace

TEST_CASE("kiln run --check-numerics names the first value that holds a nan, and where it is made") {
  const Files f({1.0f, -1.0f, 4.0f, 9.0f});
  // Without the flag the nan reaches the output.
  const KilnResult plain = run_kiln(f.run("jit", false));
  CHECK(plain.status == 0);
  CHECK(std::isnan(load_npy(f.dir.file("out/y.npy")).f32()(1)));

  // The interpreter checks every node: sqrt's %s, line 3.
  const KilnResult interp = run_kiln(f.run("interp", true));
  CHECK(interp.status != 0);
  for (const std::string& part : std::vector<std::string>{"check-numerics: %s (f32[4]) holds nan at [1]", "made by the interpreter's node 0",
                                 "by op 'sqrt' in enc.0.ffn, at " + f.kir + ":3:8"})
    CHECK_MESSAGE(interp.err.find(part) != std::string::npos, interp.err, " lacks ", part);

  // The JIT checks every kernel: sqrt and exp are one, whose result is %y (line 4).
  const KilnResult jit = run_kiln(f.run("jit", true));
  CHECK(jit.status != 0);
  for (const std::string& part : std::vector<std::string>{"check-numerics: %y (f32[4]) holds nan at [1]", "made by kernel call 0 of 1 (k0 loop",
                                 ") in enc.0.ffn, enc.0.ffn (backward)",
                                 "by op 'exp' in enc.0.ffn (backward), at " + f.kir + ":4:8"})
    CHECK_MESSAGE(jit.err.find(part) != std::string::npos, jit.err, " lacks ", part);
}

TEST_CASE("kiln run --check-numerics names an input that already holds an infinity, and lets -inf pass") {
  const Files bad({1.0f, 2.0f, std::numeric_limits<float>::infinity(), 9.0f});
  for (const char* backend : {"interp", "jit"}) {
    const KilnResult r = run_kiln(bad.run(backend, true));
    CHECK(r.status != 0);
    CHECK_MESSAGE(r.err.find("check-numerics: input %x (f32[4]) holds inf at [2] before the run") != std::string::npos,
                  r.err);
  }
  // -inf is the attention mask's value (and log 0): it passes.
  const Files log_zero({1.0f, 0.0f, 4.0f, 9.0f}, "graph @g {\n  input %x : f32[4]\n  %y = log(%x) : f32[4]\n  output %y\n}\n");
  for (const char* backend : {"interp", "jit"}) {
    CHECK(run_kiln(log_zero.run(backend, true)).status == 0);
    CHECK(load_npy(log_zero.dir.file("out/y.npy")).f32()(1) == -std::numeric_limits<float>::infinity());
  }
}
