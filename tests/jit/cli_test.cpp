// The kiln command's JIT flags: run --backend jit|interp (jit the default),
// --threads, --target-cpu, --time-passes, and kiln compile --emit llvm|asm|obj.
#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "cli/run_kiln.h"
#include "compiler/target/target.h"
#include "engine/npy.h"
#include "text_and_files.h"

namespace {

std::vector<std::string> mlp_run(const std::string& out_dir, std::vector<std::string> extra) {
  std::vector<std::string> args = {"run", source_path("examples/mlp.kir"),
                                   "-i", "x=" + source_path("examples/inputs/mlp/x.npy"),
                                   "-i", "labels=" + source_path("examples/inputs/mlp/labels.npy"),
                                   "-o", out_dir};
  args.insert(args.end(), extra.begin(), extra.end());
  return args;
}

}  // namespace

TEST_CASE("kiln run uses the jit by default and agrees with --backend interp") {
  TempDir dir;
  const KilnResult jit = run_kiln(mlp_run(dir.file("jit"), {"--threads", "2", "--time-passes"}));
  REQUIRE(jit.status == 0);
  CHECK(contains(jit.err, "optimize"));
  CHECK(contains(jit.err, "codegen"));
  const KilnResult interp = run_kiln(mlp_run(dir.file("interp"), {"--backend", "interp"}));
  REQUIRE(interp.status == 0);
  CHECK(interp.err.empty());
  const float a = kiln::load_npy(dir.file("jit/loss.npy")).f32()();
  const float b = kiln::load_npy(dir.file("interp/loss.npy")).f32()();
  CHECK(a == doctest::Approx(b).epsilon(1e-5));
}

TEST_CASE("kiln run rejects bad jit flags") {
  TempDir dir;
  const KilnResult threads = run_kiln(mlp_run(dir.file("o"), {"--threads", "0"}));
  CHECK(threads.status == 2);
  CHECK(contains(threads.err, "--threads"));
  const KilnResult cpu = run_kiln(mlp_run(dir.file("o"), {"--target-cpu", "no-such-cpu"}));
  CHECK(cpu.status == 1);
  CHECK(contains(cpu.err, "unknown target CPU 'no-such-cpu'"));
}

TEST_CASE("kiln compile emits llvm asm and obj") {
  TempDir dir;
  const std::string kir = source_path("examples/mlp.kir");
  REQUIRE(run_kiln({"compile", kir, "--emit", "llvm", "-o", dir.file("mlp.ll")}).status == 0);
  CHECK(contains(read_file(dir.file("mlp.ll")), "@kiln_main(ptr"));
  REQUIRE(run_kiln({"compile", kir, "--emit", "obj", "-o", dir.file("mlp.o")}).status == 0);
  CHECK(read_file(dir.file("mlp.o")).substr(0, 4) == "\x7f" "ELF");
  if (kiln::compiler::detect_target().triple.rfind("x86_64", 0) == 0) {
    const KilnResult r = run_kiln(
        {"compile", kir, "--emit", "asm", "-o", dir.file("mlp.s"), "--target-cpu", "skylake-avx512", "--time-passes"});
    REQUIRE(r.status == 0);
    CHECK(contains(r.err, "skylake-avx512"));
    const std::string asm_text = read_file(dir.file("mlp.s"));
    CHECK(contains(asm_text, "vaddps"));
    CHECK(contains(asm_text, "zmm"));
  }
  const KilnResult bad = run_kiln({"compile", kir, "--emit", "exe", "-o", dir.file("x")});
  CHECK(bad.status == 2);
  CHECK(contains(bad.err, "--emit"));
  const KilnResult missing = run_kiln({"compile", dir.file("nope.kir"), "-o", dir.file("x")});
  CHECK(missing.status == 1);
}
