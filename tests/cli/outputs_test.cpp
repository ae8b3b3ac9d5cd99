// What kiln writes, as a user (or someone planting links) meets it: an output
// replaces a planted symlink instead of writing through it, kiln average never
// writes into a run it reads and writes its checkpoint and task files all or
// none, and a path flag kiln cannot use is a flag error naming the flag (exit 2)
// before any work; perf's map, whose name is fixed, is never written through a
// link either; no source opens a file for writing but the atomic writer; and
// -o - is standard output. A
// small copy model on the interpreter keeps it fast.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "cli/run_kiln.h"
#include "engine/npy.h"
#include "text_and_files.h"

namespace fs = std::filesystem;

namespace {

// A copy-task run of 3 steps keeping the snapshots of steps 2 and 3, trained once.
const std::string& trained_run() {
  static TempDir dir;
  static const std::string path = [] {
    const std::string p = dir.file("run");
    const KilnResult r =
        run_kiln({"train",  "--task",           "copy", "--steps",      "3",  "--checkpoint",     p,   "--d-model",
                  "32",     "--heads",          "2",    "--d-ff",       "64", "--layers",         "1", "--backend",
                  "interp", "--eval-sentences", "4",    "--save-every", "1",  "--keep-snapshots", "2"});
    REQUIRE_MESSAGE(r.status == 0, r.err);
    return p;
  }();
  return path;
}

// A copy of the trained run in `dir`, for a test that may damage it.
std::string run_copy(const TempDir& dir) {
  const std::string run = dir.file("run");
  fs::copy(trained_run(), run, fs::copy_options::recursive);
  return run;
}

void put(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// Runs `kiln profile` of a small graph with KILN_PERF_MAP=1 as the process the
// shell becomes (exec keeps its pid), after `before`, which may use $$: the pid
// kiln will have. Returns that pid.
std::string profile_with_perf_map(const TempDir& dir, const std::string& before) {
  const std::string kiln = "KILN_PERF_MAP=1 KILN_CACHE_DIR=" + shell_quote(dir.file("cache")) + " exec " +
                           shell_quote(KILN_BINARY) + " profile " + shell_quote(source_path("examples/mlp.kir")) +
                           " --steps 1 --trace " + shell_quote(dir.file("trace.json")) + " >/dev/null 2>&1";
  const std::string script = "echo $$; " + before + kiln;
  FILE* pipe = popen(("sh -c " + shell_quote(script)).c_str(), "r");
  REQUIRE(pipe);
  char pid[32] = {};
  const bool got = std::fgets(pid, sizeof pid, pipe) != nullptr;
  CHECK(pclose(pipe) == 0);
  REQUIRE(got);
  return std::string(pid, std::strcspn(pid, "\n"));
}

}  // namespace

TEST_CASE("kiln eval --dump-ids replaces a planted symlink instead of writing through it") {
  TempDir dir;
  const std::string victim = dir.file("victim.txt"), ids = dir.file("ids.txt");
  put(victim, "the user's file");
  fs::create_symlink(victim, ids);
  const KilnResult r =
      run_kiln({"eval", "--checkpoint", trained_run(), "--limit", "3", "--dump-ids", ids, "--backend", "interp"});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(read_file(victim) == "the user's file");
  CHECK_FALSE(fs::is_symlink(ids));
  const std::string written = read_file(ids);
  CHECK(std::count(written.begin(), written.end(), '\n') == 3);
  CHECK(contains(written, "\t"));
}

TEST_CASE("kiln average refuses an output that is, or is inside, a run it reads, and changes nothing") {
  TempDir dir;
  const std::string run = run_copy(dir);
  const std::string checkpoint = run + "/checkpoint.safetensors", snapshot = run + "/snapshots/step-00000003";
  const std::string before = read_file(checkpoint), snapshot_before = read_file(snapshot + "/checkpoint.safetensors");
  fs::create_directory_symlink(run, dir.file("link"));
  const auto refused = [&](const std::vector<std::string>& args, const std::vector<std::string>& parts) {
    const KilnResult r = run_kiln(args);
    CHECK(r.status == 1);
    for (const std::string& part : parts) CHECK_MESSAGE(contains(r.err, part), r.err);
  };
  refused({"average", "--checkpoint", run, "--last", "2", "-o", run},
          {"average: --output " + run + " is the run directory " + run + " that --checkpoint reads"});
  refused({"average", "--checkpoint", run, "--last", "2", "-o", snapshot},
          {"--output " + snapshot + " is inside the run directory " + run + " that --checkpoint reads"});
  refused({"average", "--checkpoint", run, "--last", "2", "-o", dir.file("link")}, {"--output", "--checkpoint"});
  refused({"average", "--checkpoint", dir.file("link"), "--last", "2", "-o", run + "/averaged"},
          {"--output", "--checkpoint"});
  // Snapshots named one by one: their run is read too.
  refused({"average", run + "/snapshots/step-00000002", snapshot, "-o", run},
          {"--output " + run + " is the run directory", "of the input CHECKPOINT " + run + "/snapshots/step-00000002"});
  refused({"average", run + "/snapshots/step-00000002", snapshot, "-o", snapshot},
          {"is one of the inputs (CHECKPOINT " + snapshot + ")"});
  CHECK(read_file(checkpoint) == before);
  CHECK(read_file(snapshot + "/checkpoint.safetensors") == snapshot_before);
  CHECK_FALSE(fs::exists(run + "/averaged"));
}

TEST_CASE("kiln average writes its checkpoint and the run's task files all or none") {
  TempDir dir;
  const std::string run = run_copy(dir), out = dir.file("average");
  put(run + "/vocab.txt", "the task's own file");
  // vocab.txt cannot be written (a directory holds its place): neither is the checkpoint.
  fs::create_directories(out + "/vocab.txt/inside");
  KilnResult r = run_kiln({"average", "--checkpoint", run, "--last", "2", "-o", out});
  CHECK(r.status == 1);
  CHECK_MESSAGE(contains(r.err, out + "/vocab.txt"), r.err);
  CHECK_MESSAGE(contains(r.err, "none of the 2 files was changed"), r.err);
  CHECK_FALSE(fs::exists(out + "/checkpoint.safetensors"));
  fs::remove_all(out + "/vocab.txt");
  r = run_kiln({"average", "--checkpoint", run, "--last", "2", "-o", out});
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(fs::exists(out + "/checkpoint.safetensors"));
  CHECK(read_file(out + "/vocab.txt") == "the task's own file");
}

TEST_CASE("a path flag kiln cannot use is a flag error naming the flag, before any work") {
  TempDir dir;
  const std::string graph = source_path("examples/mlp.kir"), file = dir.file("file.txt");
  put(file, "x");
  const std::string missing = dir.file("missing"), in_missing = missing + "/out";
  const std::string under_file = file + "/out";
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"profile", graph, "--trace", ""}, "--trace: wants a file to write, got ''"},
      {{"profile", graph, "--trace", dir.path().string()}, "--trace: wants a file to write, got the directory"},
      {{"profile", graph, "--trace", in_missing},
       "--trace: cannot write " + in_missing + ": " + missing + " does not exist"},
      {{"profile", graph, "--trace", under_file},
       "--trace: cannot write " + under_file + ": " + file + " is not a directory"},
      {{"compile", graph, "-o", ""}, "--output: wants a file to write, got ''"},
      {{"compile", graph, "--emit", "obj", "-o", dir.file("g.o"), "--header", ""}, "--header: wants a file to write"},
      {{"opt", graph, "-o", dir.path().string()}, "--output: wants a file to write, got the directory"},
      {{"grad", graph, "--loss", "loss", "--wrt", "w1", "-o", ""}, "--output: wants a file to write"},
      {{"train-graph", graph, "--loss", "loss", "-o", in_missing}, "--output: cannot write"},
      {{"check", ""}, "FILE: wants a file to read, got ''"},
      {{"dot", dir.path().string()}, "FILE: wants a file to read, got the directory"},
      {{"run", graph, "-o", file}, "--output-dir: wants a directory to write in, got the file " + file},
      {{"run", graph, "--save", ""}, "--save: wants a directory to write in, got ''"},
      {{"run", graph, "--save", under_file},
       "--save: cannot create " + under_file + ": " + file + " is not a directory"},
      {{"eval", "--checkpoint", "", "--split", "dev"}, "--checkpoint: wants a directory, got ''"},
      {{"eval", "--checkpoint", dir.path().string(), "--dump-ids", ""}, "--dump-ids: wants a file to write, got ''"},
      {{"eval", "--checkpoint", dir.path().string(), "--output", file}, "--output: wants a directory to write in"},
      {{"average", dir.path().string(), "-o", ""}, "--output: wants a directory to write in, got ''"},
      {{"average", file, "-o", dir.file("avg")}, "CHECKPOINT: wants a directory, got the file " + file},
      {{"translate", "--checkpoint", dir.path().string(), "-o", dir.path().string(), "1 2"},
       "--output: wants a file to write, got the directory"},
      {{"score", "--hyp", "", "--ref", file}, "--hyp: wants a file to read, got ''"},
      {{"batches", "--checkpoint", dir.path().string(), "-o", in_missing}, "--output: cannot write"},
      {{"export", "--config", "tiny", "--batch", "1", "--src-len", "4", "--tgt-len", "4", "-o", file},
       "--output: wants a directory to write in, got the file"},
      {{"prepare", "--train", file, "--valid", file, "-o", ""}, "--output: wants a directory to write in"},
      {{"train", "--task", "copy", "--steps", "1", "--checkpoint", file},
       "--checkpoint: wants a directory to write in"},
      {{"train", "--task", "copy", "--steps", "1", "--checkpoint", dir.file("t"), "--profile", ""},
       "--profile: wants a file to write, got ''"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args);
    const KilnResult r = run_kiln(c.args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(contains(r.err, "kiln: error: " + c.message), r.err);
  }
  CHECK_FALSE(fs::exists(dir.file("t")));  // train stopped at its flags
}

TEST_CASE("KILN_PERF_MAP writes /tmp/perf-PID.map, a name anyone can predict, never through a planted symlink") {
  TempDir dir;
  const std::string victim = dir.file("victim.txt");
  std::ofstream(victim) << "the user's file";
  const std::string map =
      "/tmp/perf-" + profile_with_perf_map(dir, "ln -s " + shell_quote(victim) + " /tmp/perf-$$.map; ") + ".map";
  CHECK(read_file(victim) == "the user's file");
  CHECK(fs::is_symlink(map));  // left alone; compiler_flags_test.cpp checks the map kiln writes otherwise
  fs::remove(map);
}

TEST_CASE("no source of kiln opens a file for writing but the atomic writer, and the appenders that say why") {
  const std::regex opens_for_writing(R"(ofstream|std::fstream|fopen\([^;]*"[wa]|O_CREAT)");
  const std::vector<std::string> allowed = {
      "engine/atomic_file.cpp",        // the atomic writer itself
      "compiler/jit/perf_map.cpp",     // perf's /tmp/perf-PID.map: a fixed name, appended to, O_NOFOLLOW
      "models/run/run_log.h",        // DIR/log.jsonl, appended a line at a time after an atomic rewrite
      "tools/python/onnx_import.cpp",  // kiln-import's stderr, in a fresh mkdtemp directory
  };
  std::string found;  // FILE:LINE of each
  for (const char* folder : {"engine", "ops", "compiler", "models", "tools"})
    for (const auto& e : fs::recursive_directory_iterator(source_path(folder))) {
      const std::string ext = e.path().extension().string();
      if (ext != ".cpp" && ext != ".h") continue;
      const std::string relative = fs::relative(e.path(), KILN_SOURCE_DIR).string();
      if (std::find(allowed.begin(), allowed.end(), relative) != allowed.end()) continue;
      std::ifstream in(e.path());
      int number = 0;
      for (std::string line; std::getline(in, line);) {
        ++number;
        if (std::regex_search(line, opens_for_writing)) found += " " + relative + ":" + std::to_string(number);
      }
    }
  CHECK_MESSAGE(found.empty(), "write these through engine/atomic_file.h:" << found);
}

TEST_CASE("kiln opt, grad, train-graph, compile and run refuse an output that is one of their inputs, by any name") {
  TempDir dir;
  const std::string kir = dir.file("g.kir");
  const std::string text = "graph @g {\n  input %x : f32[2]\n  %y = exp(%x) : f32[2]\n  %l = sum(%y) : f32[]\n"
                           "  output %y\n  output %l\n}\n";
  write_file(kir, text);
  fs::create_symlink(kir, dir.file("link.kir"));
  fs::create_hard_link(kir, dir.file("hard.kir"));
  for (const std::string& out : {kir, dir.file("link.kir"), dir.file("hard.kir")}) {
    CAPTURE(out);
    for (const std::vector<std::string>& args :
         {std::vector<std::string>{"opt", kir, "-o", out}, {"grad", kir, "--loss", "l", "--wrt", "x", "-o", out},
          {"train-graph", kir, "--loss", "l", "-o", out}, {"compile", kir, "--emit", "llvm", "-o", out}}) {
      CAPTURE(args[0]);
      const KilnResult r = run_kiln(args);
      CHECK(r.status == 1);
      CHECK_MESSAGE(r.err.find("-o " + out + " is the same file as FILE " + kir + ", which kiln reads") !=
                        std::string::npos,
                    r.err);
      CHECK(read_file(kir) == text);
    }
  }
  // kiln run: an output NAME.npy in --output-dir that is an --input file.
  kiln::save_npy(dir.file("x.npy"), kiln::Tensor(kiln::Tensor::F32{1.0f, 2.0f}));
  fs::create_directory(dir.file("out"));
  fs::create_hard_link(dir.file("x.npy"), dir.file("out/y.npy"));
  const std::string before = read_file(dir.file("x.npy"));
  const KilnResult r = run_kiln({"run", kir, "--input", "x=" + dir.file("x.npy"), "-o", dir.file("out")});
  CHECK(r.status == 1);
  CHECK_MESSAGE(r.err.find("--output-dir's " + dir.file("out/y.npy") + " is the same file as --input x=" +
                           dir.file("x.npy")) != std::string::npos,
                r.err);
  CHECK(read_file(dir.file("x.npy")) == before);
}

TEST_CASE("-o - writes to standard output, as the file would hold, and makes no file named '-'") {
  TempDir dir;
  const std::string kir = dir.file("g.kir");
  write_file(kir, "graph @g {\n  input %x : f32[2]\n  param %w : f32[2]\n  %m = mul(%x, %w) : f32[2]\n"
                  "  %y = exp(%m) : f32[2]\n  %l = sum(%y) : f32[]\n  output %y\n  output %l\n}\n");
  const std::string in_dir = "cd " + shell_quote(dir.path().string()) + " && ";  // where a file '-' would go
  const std::vector<std::vector<std::string>> commands = {
      {"opt", kir},
      {"grad", kir, "--loss", "l", "--wrt", "x"},
      {"train-graph", kir, "--loss", "l"},
      {"compile", kir, "--emit", "llvm"},
      {"compile", kir, "--emit", "asm"},
      {"compile", kir, "--emit", "program"},
  };
  for (const std::vector<std::string>& command : commands) {
    CAPTURE(command[0]);
    CAPTURE(command.back());
    std::vector<std::string> to_file = command, to_stdout = command;
    to_file.insert(to_file.end(), {"-o", dir.file("out.txt")});
    to_stdout.insert(to_stdout.end(), {"-o", "-"});
    const KilnResult file = run_kiln(to_file);
    REQUIRE_MESSAGE(file.status == 0, file.err);
    const KilnResult out = run_kiln(to_stdout, in_dir);
    REQUIRE_MESSAGE(out.status == 0, out.err);
    CHECK(!out.out.empty());
    CHECK(out.out == read_file(dir.file("out.txt")));
    CHECK(!fs::exists(dir.file("-")));
  }
  // An object and its header are written together: not to stdout.
  KilnResult r = run_kiln({"compile", kir, "--emit", "obj", "-o", "-", "--header", dir.file("g.h")}, in_dir);
  CHECK(r.status == 2);
  CHECK(r.err.find("--header: needs -o FILE, not -") != std::string::npos);

  // kiln import: the graph to stdout, the report to stderr, the params where --params says.
  const std::string onnx = source_path("tests/cli/tiny_linear.onnx");
  r = run_kiln({"import", onnx, "-o", "-"}, in_dir);
  CHECK(r.status == 1);
  CHECK(r.err.find("-o -: " + onnx + " has 2 params and state, which go to files: name their directory with "
                   "--params DIR") != std::string::npos);
  r = run_kiln({"import", onnx, "-o", "-", "--params", dir.file("p")}, in_dir);
  REQUIRE_MESSAGE(r.status == 0, r.err);
  CHECK(r.out.find("graph @") != std::string::npos);
  CHECK(r.err.find("tensors in " + dir.file("p")) != std::string::npos);
  CHECK(fs::exists(dir.file("p")));
  const KilnResult file = run_kiln({"import", onnx, "-o", dir.file("linear.kir"), "--params", dir.file("p2")});
  REQUIRE_MESSAGE(file.status == 0, file.err);
  CHECK(r.out == read_file(dir.file("linear.kir")));
  CHECK(!fs::exists(dir.file("-")));
  CHECK(!fs::exists(dir.file("-.params")));
}
