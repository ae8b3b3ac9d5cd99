// The compiler's reports and switches on kiln run and kiln compile.
#include <doctest/doctest.h>

#include <cstdlib>
#include <filesystem>
#include <set>

#include "cli/run_kiln.h"
#include "cli/temp_dir.h"
#include "text_and_files.h"

namespace {

std::string example(const std::string& rel) { return source_path("examples/" + rel); }
}  // namespace

TEST_CASE("kiln compile --emit program writes the schedule: calls over buffers, then the distinct kernels") {
  TempDir dir;
  const KilnResult r = run_kiln({"compile", example("attention.kir"), "--emit", "program", "-o", dir.file("p.txt")});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const std::string p = read_file(dir.file("p.txt"));
  CHECK(p.rfind("program @attention: ", 0) == 0);
  CHECK(contains(p, "flash_attention(%q, %k, %v, %mask) -> %ctx"));
  CHECK(contains(p, "@ arena+"));
  CHECK(contains(p, "kernels:\n"));
}

TEST_CASE("kiln run's compiler reports go to stderr and the switches change no output") {
  TempDir dir;
  const std::vector<std::string> base = {"run", example("attention.kir"), "--input",
                                         "x=" + example("inputs/attention/x.npy")};
  auto with = [&](std::vector<std::string> extra, const std::string& out) {
    std::vector<std::string> args = base;
    args.push_back("-o");
    args.push_back(dir.file(out));
    args.insert(args.end(), extra.begin(), extra.end());
    return run_kiln(args);
  };
  const KilnResult plain = with({}, "plain");
  REQUIRE(plain.status == 0);
  const KilnResult reports = with({"--print-memory-plan", "--print-fusion-decisions", "--time-passes", "--no-reuse",
                                   "--no-cache", "--print-after=fusion"},
                                  "reports");
  INFO(reports.err);
  REQUIRE(reports.status == 0);
  CHECK(contains(reports.err, "memory: naive"));
  CHECK(contains(reports.err, "flash-attention: %ctx = flash_attention(%q, %k, %v, %mask) {scale=0.5, heads=4}"));
  CHECK(contains(reports.err, "not fused: %proj (matmul at " + example("attention.kir") + ":"));
  CHECK(contains(reports.err, ") into %y (layer_norm at " + example("attention.kir") + ":"));
  CHECK(contains(reports.err, "; *** IR Dump After fusion ***"));
  CHECK(contains(reports.err, "kernels "));
  CHECK(read_file(dir.file("plain/y.npy")) == read_file(dir.file("reports/y.npy")));
}

TEST_CASE("kiln run --dump-dir writes every stage of the compile: passes, decisions, program, plan, kernels") {
  namespace fs = std::filesystem;
  TempDir dir;
  const KilnResult r = run_kiln({"run", example("attention.kir"), "--input", "x=" + example("inputs/attention/x.npy"),
                                 "-o", dir.file("out"), "--dump-dir", dir.file("dump")});
  INFO(r.err);
  REQUIRE(r.status == 0);
  const fs::path g = fs::path(dir.file("dump")) / "attention";
  CHECK(read_file((g / "00-input.kir").string()).rfind("graph @attention {", 0) == 0);
  CHECK(contains(read_file((g / "04-pretranspose-weights.decisions.txt").string()),
                 "pretranspose-weights: %q = matmul(%x, %wq.t) {transpose_b}"));
  CHECK(contains(read_file((g / "10-fusion.kir").string()), "= fusion("));
  CHECK(contains(read_file((g / "07-flash-attention.decisions.txt").string()), "%ctx = flash_attention("));
  CHECK(contains(read_file((g / "10-fusion.decisions.txt").string()), "not fused: %proj (matmul at " + example("attention.kir") + ":"));
  const std::string program = read_file((g / "program.txt").string());
  CHECK(program.rfind("program @attention: ", 0) == 0);
  CHECK(contains(program, "-> %wq.t : f32[16,16] @ invariant [once]"));
  CHECK(contains(read_file((g / "memory-plan.txt").string()), "memory: naive"));
  // Every kernel of the program: as lowered, as optimized, and its assembly.
  size_t kernels = 0;
  bool matmul = false;
  for (const auto& e : fs::directory_iterator(g / "kernels"))
    if (e.path().extension() == ".s") {
      ++kernels;
      matmul = matmul || contains(e.path().filename().string(), "-matmul.s");
      const std::string stem = e.path().string().substr(0, e.path().string().size() - 2);
      CHECK(contains(read_file(stem + ".ll"), " void @kiln_k"));  // "define dso_local void @kiln_k..."
      CHECK(contains(read_file(stem + ".opt.ll"), " void @kiln_k"));
      CHECK(contains(read_file(e.path().string()), "kiln_k"));
    }
  CHECK(kernels > 1);
  CHECK(contains(program, std::to_string(kernels) + " distinct kernels"));
  CHECK(matmul);  // named kN-KIND, as program.txt lists them
}

TEST_CASE("bad compiler flags exit 2 naming the flag, and write nothing") {
  TempDir dir;
  const KilnResult unknown_pass = run_kiln({"compile", example("attention.kir"), "--emit", "program", "-o",
                                            dir.file("p.txt"), "--passes=fuse-all"});
  CHECK(unknown_pass.status == 2);
  CHECK(contains(unknown_pass.err, "--passes"));
  CHECK(contains(unknown_pass.err, "unknown pass 'fuse-all'"));
  const KilnResult bad_emit =
      run_kiln({"compile", example("attention.kir"), "--emit", "programme", "-o", dir.file("p.txt")});
  CHECK(bad_emit.status == 2);
  CHECK(contains(bad_emit.err, "--emit"));
  const KilnResult unwritable = run_kiln(
      {"compile", example("attention.kir"), "--emit", "program", "-o", dir.file("no/such/dir/p.txt")});
  CHECK(unwritable.status == 2);
  CHECK(contains(unwritable.err, "--output: cannot write " + dir.file("no/such/dir/p.txt")));
  const KilnResult bad_precision = run_kiln(
      {"compile", example("attention.kir"), "--emit", "program", "-o", dir.file("p.txt"), "--precision", "f16"});
  CHECK(bad_precision.status == 2);
  CHECK(contains(bad_precision.err, "--precision"));
  CHECK(!std::filesystem::exists(dir.file("p.txt")));
}

TEST_CASE("kiln run --precision bf16 rounds the matmuls' operands: close to f32, not equal, the casts in the dump") {
  TempDir dir;
  const std::vector<std::string> base = {"run", example("mlp.kir"), "--input", "x=" + example("inputs/mlp/x.npy"),
                                         "--input", "labels=" + example("inputs/mlp/labels.npy")};
  auto run = [&](const std::string& precision) {
    std::vector<std::string> args = base;
    for (const std::string& a : {std::string("--precision"), precision, std::string("-o"), dir.file(precision),
                                 std::string("--print-after=bf16-matmuls")})
      args.push_back(a);
    return run_kiln(args);
  };
  const KilnResult f32 = run("f32"), bf16 = run("bf16");
  INFO(f32.err, bf16.err);
  REQUIRE(f32.status == 0);
  REQUIRE(bf16.status == 0);
  CHECK(contains(bf16.err, "cast(%x) {dtype=bf16}"));
  CHECK(read_file(dir.file("f32/loss.npy")) != read_file(dir.file("bf16/loss.npy")));
}

TEST_CASE("KILN_PERF_MAP=1 writes perf's map of the JIT'd functions, named after their kernels") {
  namespace fs = std::filesystem;
  std::set<fs::path> before;
  for (const auto& e : fs::directory_iterator("/tmp"))
    if (e.path().filename().string().rfind("perf-", 0) == 0) before.insert(e.path());
  TempDir dir;
  setenv("KILN_PERF_MAP", "1", 1);
  // The default pipeline but pretranspose-weights, whose products of 16 rows
  // would read their weights in place: the packed GEMM's micro-kernel shows.
  const KilnResult r = run_kiln({"run", example("attention.kir"), "--input", "x=" + example("inputs/attention/x.npy"),
                                 "--no-cache", "-o", dir.file("out"),
                                 "--passes=constant-fold,simplify,transpose-folding,cse,flash-attention,dce,fusion"});
  unsetenv("KILN_PERF_MAP");
  INFO(r.err);
  REQUIRE(r.status == 0);
  std::string map;
  for (const auto& e : fs::directory_iterator("/tmp"))
    if (e.path().filename().string().rfind("perf-", 0) == 0 && !before.count(e.path())) {
      map += read_file(e.path().string());
      fs::remove(e.path());
    }
  // "ADDR SIZE [kind N ops type] function": the kernel and its outlined parts.
  CHECK(contains(map, " [matmul 1 ops f32["));
  CHECK(contains(map, ".micro\n"));
  CHECK(contains(map, " [flash_attention 1 ops f32["));
}
