// Numeric flags refuse nonsense (nan, infinities, values beyond their type, out
// of range) with a message saying what the flag wants, exit 2, and touch nothing;
// flags that name things refuse names that do not exist; a command with two
// outputs writes both or neither.
#include <doctest/doctest.h>

#include <filesystem>

#include "cli/run_kiln.h"
#include "compiler/runtime/thread_limit.h"
#include "compiler/target/target.h"
#include "file_size_limit.h"

namespace fs = std::filesystem;

TEST_CASE("numeric flags say what they want and refuse nan, infinities and overflow") {
  TempDir dir;
  const std::string ckpt = dir.file("ckpt");
  const std::vector<std::string> train = {"train", "--task", "copy", "--checkpoint", ckpt};
  struct Case {
    std::vector<std::string> flags;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--steps", "5", "--lr-factor", "nan"}, "--lr-factor: wants a number > 0, got nan"},
      {{"--steps", "5", "--lr-factor", "inf"}, "--lr-factor: wants a number > 0, got inf"},
      {{"--steps", "5", "--lr-factor", "0"}, "--lr-factor: wants a number > 0, got 0"},
      {{"--steps", "99999999999999999999"}, "--steps: wants an integer >= 1, got 99999999999999999999 (too large)"},
      {{"--steps", "-3"}, "--steps: wants an integer >= 1, got -3"},
      {{"--steps", "2.5"}, "--steps: wants an integer >= 1, got '2.5'"},
      {{"--steps", "5", "--dropout", "1.5"}, "--dropout: wants a number from 0 to 0.99, got 1.5"},
      {{"--steps", "5", "--dropout", "-nan"}, "--dropout: wants a number from 0 to 0.99, got -nan"},
      {{"--steps", "5", "--threads", "3000000000"},
       "--threads: wants an integer from 1 to " + std::to_string(kiln::compiler::thread_limit().threads) +
           ", got 3000000000 (" + kiln::compiler::thread_limit().what + ")"},
      {{"--minutes", "nan"}, "--minutes: wants a number > 0, got nan"},
  };
  for (const Case& c : cases) {
    std::vector<std::string> args = train;
    args.insert(args.end(), c.flags.begin(), c.flags.end());
    const KilnResult r = run_kiln(args);
    INFO("stderr: ", r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(c.message) != std::string::npos);
  }
  const KilnResult beam = run_kiln({"translate", "--checkpoint", ckpt, "--beam", "65", "x"});
  CHECK(beam.err.find("--beam: wants an integer from 1 to 64, got 65") != std::string::npos);
  for (const char* cmd : {"translate", "eval", "train"}) {
    const KilnResult precision = run_kiln({cmd, "--checkpoint", ckpt, "--precision", "f16"});
    INFO(cmd, ": ", precision.err);
    CHECK(precision.status == 2);
    CHECK(precision.err.find("--precision") != std::string::npos);
  }
  CHECK(!fs::exists(ckpt));
}

TEST_CASE("kiln bench --op names a row that exists") {
  const KilnResult r = run_kiln({"bench", "--op", "nosuch"});
  CHECK(r.status != 0);
  CHECK(r.err.find("--op: no benchmark row 'nosuch' (rows: add exp") != std::string::npos);
}

TEST_CASE("kiln bench --target-cpu names a CPU LLVM knows whose code this host runs") {
  const KilnResult unknown = run_kiln({"bench", "--peak", "--target-cpu", "nosuch"});
  CHECK(unknown.status != 0);
  CHECK(unknown.err.find("--target-cpu: unknown target CPU 'nosuch'") != std::string::npos);
  // SSE's 4 lanes run anywhere kiln does; then the peak is measured at AVX2's 8, its narrowest.
  const KilnResult sse = run_kiln({"bench", "--peak", "--json", "--threads", "1", "--target-cpu", "nehalem"});
  CHECK(sse.status == 0);
  CHECK(sse.out.find("\"cpu\":\"nehalem\"") != std::string::npos);
  CHECK(sse.out.find("\"lanes\":8") != std::string::npos);
  if (kiln::compiler::detect_target().vector_width < 16) {  // an AVX2 host cannot run AVX-512 code
    const KilnResult wide = run_kiln({"bench", "--peak", "--target-cpu", "skylake-avx512"});
    CHECK(wide.status != 0);
    CHECK(wide.err.find("--target-cpu skylake-avx512: this host") != std::string::npos);
  }
}

TEST_CASE("kiln bench refuses the flags of a model's step without --model, naming the flag") {
  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"--trace", "t.json"}, {"--per-kernel"}, {"--src-len", "8"}, {"--tgt-len", "8"}, {"--vocab", "100"},
           {"--compile-only", "cache"}}) {
    std::vector<std::string> argv{"bench", "--op", "add"};
    argv.insert(argv.end(), args.begin(), args.end());
    const KilnResult r = run_kiln(argv);
    INFO("stderr: ", r.err);
    CHECK(r.status == 2);
    CHECK(r.err.find(args[0] + " requires --model") != std::string::npos);
  }
}

TEST_CASE("kiln compile refuses a --header that is the object file, and leaves that file alone") {
  TempDir dir;
  const std::string obj = dir.file("m.o");
  { std::ofstream(obj) << "the user's file"; }
  const KilnResult r = run_kiln(
      {"compile", source_path("examples/mlp.kir"), "-o", obj, "--header", dir.file("./m.o")});
  CHECK(r.status != 0);
  CHECK(r.err.find("is the object file -o " + obj) != std::string::npos);
  std::ifstream in(obj);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "the user's file");
}

TEST_CASE("kiln compile writes the object and the header all or none") {
  TempDir dir;
  const std::string obj = dir.file("m.o");
  { std::ofstream(obj) << "the user's object"; }
  // A disk that fills up (kiln inherits the limit): the object cannot be written whole.
  const FileSizeLimit full_disk(1000);
  const KilnResult r =
      run_kiln({"compile", source_path("examples/mlp.kir"), "-o", obj, "--header", dir.file("m.h")});
  CHECK(r.status != 0);
  CHECK(r.err.find("none of the 2 files was changed") != std::string::npos);
  std::ifstream in(obj);
  CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == "the user's object");
  CHECK_FALSE(std::filesystem::exists(dir.file("m.h")));
}
