// Usage errors help: a mistyped flag or command gets the nearest valid one,
// even where CLI11 would first complain of a missing required flag, and every
// usage error points at the help of the subcommand given. Help and the
// README's command reference name every pass whole and as the code has them.
#include <doctest/doctest.h>

#include "cli/run_kiln.h"
#include "compiler/passes/pass_manager.h"
#include "engine/atomic_file.h"
#include "text_and_files.h"
#include "tools/usage_errors.h"

using kiln::cli::edit_distance;
using kiln::cli::nearest_name;

TEST_CASE("edit distance and the nearest name") {
  CHECK(edit_distance("train", "train") == 0);
  CHECK(edit_distance("trian", "train") == 1);  // a swap of neighbours is one edit
  CHECK(edit_distance("--beem", "--beam") == 1);
  CHECK(edit_distance("", "abc") == 3);
  const std::vector<std::string> flags = {"--batch-tokens", "--beam", "--checkpoint", "--steps", "-o"};
  CHECK(nearest_name("--batch-tokns", flags) == "--batch-tokens");
  CHECK(nearest_name("-checkpoint", flags) == "--checkpoint");
  CHECK(nearest_name("--stpes", flags) == "--steps");
  CHECK(nearest_name("--batch", flags) == "--batch-tokens");  // the one flag it begins
  CHECK(nearest_name("--frobnicate", flags).empty());
  CHECK(nearest_name("-x", flags).empty());  // one letter: any short flag is as near
}

TEST_CASE("a mistyped flag gets the nearest of the subcommand's flags and its help, before a missing flag") {
  TempDir dir;
  struct Case {
    std::vector<std::string> args;
    std::string message, help;
  };
  const std::vector<Case> cases = {
      {{"train", "--batch-tokns", "512"}, "unknown flag --batch-tokns; did you mean --batch-tokens?", "kiln train"},
      {{"train", "--task", "copy", "--checkpoint", dir.file("c"), "-steps", "3"},
       "unknown flag -steps; did you mean --steps?", "kiln train"},
      {{"translate", "--chekpoint=" + dir.path().string(), "x"}, "unknown flag --chekpoint; did you mean --checkpoint?",
       "kiln translate"},
      {{"eval", "--checkpoint", dir.path().string(), "--beem", "3"}, "unknown flag --beem; did you mean --beam?",
       "kiln eval"},
      {{"opt", "--pases", "dce", "x.kir"}, "unknown flag --pases; did you mean --passes?", "kiln opt"},
      {{"score", "--frobnicate"}, "unknown flag --frobnicate", "kiln score"},
      {{"import", "m.onnx", "-o", dir.file("m.kir"), "--dimm", "n=1"}, "unknown flag --dimm; did you mean --dim?",
       "kiln import"},
      {{"trian", "--steps", "3"}, "unknown command 'trian'; did you mean 'train'?", "kiln"},
      {{"--verison"}, "unknown flag --verison; did you mean --version?", "kiln"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.args.front());
    const KilnResult r = run_kiln(c.args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.err.find(c.message) != std::string::npos, r.err);
    CHECK_MESSAGE(r.err.find("Run '" + c.help + " --help'") != std::string::npos, r.err);
    CHECK(r.out.empty());
  }
}

TEST_CASE("every usage error points at the subcommand's help, not only kiln's") {
  TempDir dir;
  kiln::write_file_atomically(dir.file("bad.toml"), "steps = [1, 2]\n");
  const std::vector<std::vector<std::string>> cases = {
      {"train", "--task", "copy", "--checkpoint", dir.file("c")},  // no budget
      {"train", "--task", "nope", "--steps", "1", "--checkpoint", dir.file("c")},
      {"train", "--config-file", dir.file("bad.toml")},
      {"translate", "--checkpoint", dir.path().string(), "--length-penalty", "-1", "x"},  // a value, not a flag
      {"translate", "x"},
      {"compile", "x.kir"},
      {"import"},
  };
  for (const std::vector<std::string>& args : cases) {
    CAPTURE(args.back());
    const KilnResult r = run_kiln(args);
    CHECK(r.status == 2);
    CHECK_MESSAGE(r.err.find("Run 'kiln " + args.front() + " --help' for usage.") != std::string::npos, r.err);
    CHECK(r.err.find("unknown flag") == std::string::npos);
    CHECK(r.err.find("Run 'kiln --help'") == std::string::npos);
  }
}

TEST_CASE("the help of every command that runs passes names each registered pass whole") {
  for (const std::string command : {"train", "opt", "run", "compile", "profile"}) {
    CAPTURE(command);
    const KilnResult r = run_kiln({command, "--help"});
    REQUIRE(r.status == 0);
    const size_t footer = r.out.find("\nPasses:\n");
    REQUIRE(footer != std::string::npos);
    for (const kiln::compiler::Pass* p : kiln::compiler::PassRegistry::global().all()) {
      CAPTURE(p->name);
      CHECK(r.out.find("\n  " + p->name + "  ", footer) != std::string::npos);  // the name, then the column's gap
    }
  }
}

TEST_CASE("the README's kiln opt line lists the default pipeline, pass for pass") {
  const std::string readme = read_file(source_path("README.md"));
  const std::string marker = "run the graph passes and print the result; default: ";
  size_t at = readme.find(marker);
  REQUIRE(at != std::string::npos);
  at += marker.size();
  // The list goes on over the following lines indented to the description column.
  const std::string indent(31, ' ');
  std::string listed;
  for (size_t end; (end = readme.find('\n', at)) != std::string::npos;) {
    listed += readme.substr(at, end - at);
    at = end + 1;
    if (readme.compare(at, indent.size(), indent) != 0) break;
    at += indent.size();
  }
  std::string pipeline;
  for (const std::string& name : kiln::compiler::PassRegistry::global().default_pipeline())
    pipeline += (pipeline.empty() ? "" : ",") + name;
  CHECK(listed == pipeline);
}
