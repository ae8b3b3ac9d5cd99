#pragma once
// The READMEs' shell blocks as a test runs them (readme_blocks_test.cpp), so a
// command in the docs that fails, or names a flag or file that does not exist,
// fails the suite. A block is a ```sh fence; the line before it may carry a
// marker, an HTML comment that markdown does not show:
//   (none)                       run as written, in a sandbox (below)
//   <!-- doc-test: short -->     run with a short budget: --minutes N becomes
//                                --steps 10 (a budget of minutes would end after the
//                                first step's compile), --steps N (N > 20) --steps 20
//   <!-- doc-test: check -->     too long or too machine-bound for CI (installing
//                                packages, the whole test suite, a corpus from the
//                                SWORD Bibles, several MPI ranks): each kiln
//                                command's subcommand and flags are checked against
//                                its --help, each repository path against the tree
// The sandbox is a fresh directory holding examples/, tools/ and compiler/ (links
// to the source tree), build/kiln and bin/kiln (the kiln under test, bin/ first
// on PATH), and the small inputs the blocks name: data/{train,valid,test}.{es,en}
// (numbers in Spanish and English), new.es and de.txt.
#include <functional>
#include <string>
#include <vector>

struct ShellBlock {
  std::string file;  // relative to the source tree
  int line = 0;      // of the opening fence
  std::string mode;  // run, short or check
  std::string text;
};

// The ```sh blocks of a markdown text, with their markers; a marker naming an
// unknown mode is an error (std::runtime_error naming file and line).
std::vector<ShellBlock> shell_blocks(const std::string& markdown, const std::string& file);

// The plain ``` blocks of a markdown text that list kiln's commands (a line
// starting "kiln SUB"), as a usage listing: mode "usage".
std::vector<ShellBlock> usage_blocks(const std::string& markdown, const std::string& file);

// What is wrong with a usage listing: each long flag against the --help of the
// command it is listed under (a line "kiln SUB ..." and the indented lines
// after it; a "kiln OTHER" mentioned in a line names OTHER's flags for the rest
// of that line). "" if nothing.
std::string check_usage(const ShellBlock& block, const std::function<std::string(const std::string&)>& help);

// Every *.md of the source tree (not .git/, nor build*/, out/ or npm's node_modules/
// directories), relative, sorted.
std::vector<std::string> markdown_files(const std::string& source_dir);

// A block's commands: continuation lines joined, comments dropped, split into
// words (quotes kept together) and at &&, ||, |, ; and line ends.
std::vector<std::vector<std::string>> block_commands(const std::string& text);

// What is wrong with a check-mode block: each kiln command's subcommand and
// flags against `help(subcommand)` (its --help text, "" for none), each word
// that is a path of the repository's folders against the tree. "" if nothing.
std::string check_block(const ShellBlock& block, const std::string& source_dir,
                        const std::function<std::string(const std::string&)>& help);

// The block's text as a short-mode run gives it.
std::string shortened(const std::string& text);
