// Docs that cannot drift: every ```sh block of the READMEs runs in a sandbox
// (shortened, or only checked, where its marker says so: readme_blocks.h), and a
// block with a wrong flag fails.
#include <doctest/doctest.h>

#include <filesystem>
#include <map>

#include "cli/readme_blocks.h"
#include "cli/run_kiln.h"
#include "text_and_files.h"

namespace fs = std::filesystem;

namespace {

// A fresh sandbox as readme_blocks.h describes it.
void make_sandbox(const TempDir& dir) {
  for (const char* folder : {"examples", "tools", "compiler"})
    fs::create_directory_symlink(source_path(folder), dir.path() / folder);
  for (const char* bin : {"bin", "build"}) {
    fs::create_directory(dir.path() / bin);
    fs::create_symlink(KILN_BINARY, dir.path() / bin / "kiln");
  }
  fs::create_directory(dir.path() / "data");
  const char* es[] = {"cero", "uno", "dos", "tres", "cuatro", "cinco", "seis", "siete", "ocho", "nueve"};
  const char* en[] = {"zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"};
  for (const auto& [split, count] : std::map<std::string, int>{{"train", 200}, {"valid", 8}, {"test", 8}}) {
    std::string src, tgt;
    for (int i = 0; i < count; ++i) {
      const int a = (i * 3 + count) % 10, b = (i * 7 + 1) % 10;
      src += std::string(es[a]) + " y " + es[b] + "\n";
      tgt += std::string(en[a]) + " and " + en[b] + "\n";
    }
    write_file(dir.file("data/" + split + ".es"), src);
    write_file(dir.file("data/" + split + ".en"), tgt);
  }
  write_file(dir.file("new.es"), "uno y dos\ntres y cuatro\n");
  write_file(dir.file("de.txt"), "Ich muss diesen Termin absagen.\n");
}

// The block run by sh -e in its own sandbox.
KilnResult run_block(const std::string& text) {
  TempDir dir;
  make_sandbox(dir);
  write_file(dir.file("block.sh"), text);
  const std::string at = shell_quote(dir.path().string());
  return run_shell("cd " + at + " && PATH=" + at + "/bin:\"$PATH\" sh -e block.sh");
}

// `kiln SUB --help`, "" for a command kiln does not have.
std::string kiln_help(const std::string& sub) {
  static std::map<std::string, std::string> seen;
  if (!seen.count(sub)) {
    const KilnResult r = run_kiln({sub, "--help"});
    seen[sub] = r.status == 0 ? r.out : "";
  }
  return seen[sub];
}

}  // namespace

TEST_CASE("every shell block of the READMEs runs, shortened where marked, or names only flags and files that exist; "
          "every usage listing names only flags that exist") {
  std::map<std::string, int> count;
  for (const std::string& file : markdown_files(KILN_SOURCE_DIR)) {
    for (const ShellBlock& block : shell_blocks(read_file(source_path(file)), file)) {
      INFO(block.file, ":", block.line, " (", block.mode, "):\n", block.text);
      ++count[block.mode];
      if (block.mode == "check") {
        CHECK(check_block(block, KILN_SOURCE_DIR, kiln_help) == "");
        continue;
      }
      const KilnResult r = run_block(block.mode == "short" ? shortened(block.text) : block.text);
      CHECK_MESSAGE(r.status == 0, r.out, r.err);
    }
    for (const ShellBlock& listing : usage_blocks(read_file(source_path(file)), file)) {
      ++count["usage"];
      CHECK(check_usage(listing, kiln_help) == "");
    }
  }
  MESSAGE("README shell blocks: ", count["run"], " run as written, ", count["short"], " run with a short budget, ",
          count["check"], " checked for flags and files; ", count["usage"],
          " usage listings checked for flags");
}

TEST_CASE("a README block with a wrong flag or a missing file fails the doc test, run or checked") {
  const std::string markdown = "Train:\n\n<!-- doc-test: check -->\n```sh\n"
                               "kiln train --task copy --stepz 3 \\\n    --checkpoint c   # a typo\n"
                               "kiln run examples/nowhere.kir -o out.npy | tee log\n```\n\n```sh\nkiln ops\n```\n";
  const std::vector<ShellBlock> blocks = shell_blocks(markdown, "x.md");
  REQUIRE(blocks.size() == 2);
  CHECK(blocks[0].mode == "check");
  CHECK(blocks[0].line == 4);
  CHECK(blocks[1].mode == "run");
  CHECK(block_commands(blocks[0].text) ==
        std::vector<std::vector<std::string>>{{"kiln", "train", "--task", "copy", "--stepz", "3", "--checkpoint", "c"},
                                              {"kiln", "run", "examples/nowhere.kir", "-o", "out.npy"},
                                              {"tee", "log"}});
  CHECK(check_block(blocks[0], KILN_SOURCE_DIR, kiln_help) ==
        "x.md:4: kiln train has no flag --stepz\nx.md:4: 'examples/nowhere.kir' is not in the repository\n");
  CHECK(check_block(blocks[1], KILN_SOURCE_DIR, kiln_help) == "");
  // Run, the same typo fails as kiln fails it.
  const KilnResult r = run_block("kiln train --task copy --stepz 3 --checkpoint c\n");
  CHECK(r.status == 2);
  CHECK(r.err.find("--stepz") != std::string::npos);
  CHECK(shortened("kiln train --minutes 30 --steps 400 --warmup 100 --steps 5") ==
        "kiln train --steps 10 --steps 20 --warmup 100 --steps 5");
  // A usage listing: each flag against the help of the command it is listed under.
  const std::vector<ShellBlock> listings = usage_blocks(
      "```\nkiln eval --checkpoint DIR [--beam K]\n          [--bleu-only]   # then kiln score --json\n"
      "PASS FLAGS  --passes=NAME\n```\n```python\nkiln.train()\n```\n",
      "z.md");
  REQUIRE(listings.size() == 1);
  CHECK(check_usage(listings[0], kiln_help) == "z.md:3: kiln eval has no flag --bleu-only\n");
  CHECK_THROWS_WITH(shell_blocks("<!-- doc-test: later -->\n```sh\nls\n```\n", "y.md"),
                    "y.md:2: unknown doc-test mode 'later' (short or check)");
}
