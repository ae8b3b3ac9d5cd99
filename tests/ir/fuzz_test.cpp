// Deterministic mutation fuzzing of the .kir parser: byte flips, deletions,
// inserted punctuation and hostile tokens, truncation and duplicated lines, applied
// to every example and to printed random graphs, plus random bytes and token soup.
// Every input must pass the .kir fuzz target (tests/fuzz): parse into a graph that
// verifies and round-trips, or be rejected with a located ParseError. Anything
// else (another exception, a crash, a hang) is a bug.
#include <doctest/doctest.h>

#include <filesystem>

#include "engine/ir/printer.h"
#include "fuzz/fuzz_targets.h"
#include "ir/random_graph.h"
#include "text_and_files.h"

using namespace kiln;

namespace {

const std::string kPunctuation = "(){}[],=:%@\"#-.\n e0123456789";
const std::vector<std::string> kHostileTokens = {"99999999999999999999999",
                                                 "-9223372036854775808",
                                                 "9223372036854775807",
                                                 "1e999",
                                                 "1e-999",
                                                 "nan",
                                                 "-inf",
                                                 "[[[[[[[[[[[[",
                                                 "}}}}",
                                                 "\\",
                                                 "\"",
                                                 "%",
                                                 "@",
                                                 "f64",
                                                 "bool[]",
                                                 "output %x",
                                                 "assign(",
                                                 "graph @g {",
                                                 "-1",
                                                 "0",
                                                 "4294967296",
                                                 "{axes=[0,0]}",
                                                 "{shape=[-1,-1]}",
                                                 "\xff\xfe",
                                                 std::string(1, '\0')};

const std::vector<std::string> kOddIntegers = {
    "0",         "1", "-1", "2", "3", "-2", "7", "-7", "4294967296", "9223372036854775807", "-9223372036854775808",
    "2147483648"};

size_t position(test::Rng& rng, const std::string& s, bool may_be_end) {
  const auto last = static_cast<int64_t>(s.size()) - (may_be_end ? 0 : 1);
  return last <= 0 ? 0 : static_cast<size_t>(rng.uniform(0, last));
}

std::string mutate(std::string s, test::Rng& rng) {
  for (int64_t n = rng.uniform(1, 3); n > 0; --n) {
    switch (rng.uniform(0, 6)) {
      case 0:  // flip a byte
        if (!s.empty()) s[position(rng, s, false)] = static_cast<char>(rng.uniform(0, 255));
        break;
      case 1:  // delete a few bytes
        if (!s.empty()) s.erase(position(rng, s, false), static_cast<size_t>(rng.uniform(1, 8)));
        break;
      case 2:  // insert punctuation
        for (int64_t k = rng.uniform(1, 3); k > 0; --k)
          s.insert(position(rng, s, true), 1, kPunctuation[position(rng, kPunctuation, false)]);
        break;
      case 3:  // truncate
        s.resize(position(rng, s, true));
        break;
      case 4: {  // duplicate a line
        const size_t at = position(rng, s, false);
        const size_t begin = at == 0 ? 0 : s.rfind('\n', at - 1) + 1;  // npos + 1 == 0
        const size_t end = std::min(s.find('\n', at), s.size());
        std::string copy(1, '\n');
        copy += s.substr(begin, end - begin);
        s.insert(end, copy);
        break;
      }
      case 5: {  // replace a number, so op inference sees odd shapes, axes and bounds
        const size_t at = s.find_first_of("0123456789", position(rng, s, true));
        if (at == std::string::npos) break;
        const size_t end = std::min(s.find_first_not_of("0123456789", at), s.size());
        s.replace(at, end - at, rng.pick(kOddIntegers));
        break;
      }
      default:  // insert a hostile token
        s.insert(position(rng, s, true), rng.pick(kHostileTokens));
        break;
    }
  }
  return s;
}

struct FuzzResults {
  int parsed = 0;
  int rejected = 0;
  std::vector<std::string> failures;  // what went wrong, with the input
};

// Checks one input with the .kir fuzz target and records the outcome.
void check_input(const std::string& input, FuzzResults& results) {
  try {
    (fuzz::fuzz_kir(input) == fuzz::Outcome::accepted ? results.parsed : results.rejected)++;
  } catch (const std::exception& e) {
    results.failures.push_back(e.what() + std::string("\n--- input ---\n") + input + "\n--- end ---");
  }
}

// Mutants of valid files should include some that stay valid (changes in comments,
// whitespace, names), or the fuzzing never reaches the checks after parsing.
void report(const FuzzResults& r, bool expect_some_parsed) {
  MESSAGE(r.parsed << " inputs parsed, " << r.rejected << " rejected, " << r.failures.size() << " failures");
  for (size_t i = 0; i < std::min<size_t>(r.failures.size(), 3); ++i) FAIL_CHECK(r.failures[i]);
  CHECK(r.failures.empty());
  CHECK(r.rejected > 0);
  if (expect_some_parsed) CHECK(r.parsed > 0);
}

}  // namespace

TEST_CASE("mutated example files parse or fail with a located error") {
  FuzzResults results;
  test::Rng rng(2024);
  int examples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(std::filesystem::path(KILN_SOURCE_DIR) / "examples")) {
    if (entry.path().extension() != ".kir") continue;
    ++examples;
    const std::string text = read_file(entry.path().string());
    check_input(text, results);
    for (int i = 0; i < 2000; ++i) check_input(mutate(text, rng), results);
  }
  CHECK(examples >= 3);
  report(results, true);
}

TEST_CASE("mutated printed random graphs parse or fail with a located error") {
  FuzzResults results;
  test::Rng rng(7);
  for (uint64_t seed = 1000; seed < 1100; ++seed) {
    const std::string text = print_kir(test::random_graph(seed));
    for (int i = 0; i < 60; ++i) check_input(mutate(text, rng), results);
  }
  report(results, true);
}

TEST_CASE("random bytes and token soup are rejected cleanly") {
  FuzzResults results;
  test::Rng rng(99);
  const std::vector<std::string> tokens = {
      "graph", "@g",    "{",        "}",    "%x",  "%y",    "%z",      "=",      "(",      ")",
      ",",     ":",     "f32",      "i32",  "[",   "]",     "2",       "-1",     "0",      "input",
      "param", "state", "output",   "add",  "sum", "fill",  "reshape", "matmul", "assign", "axes",
      "shape", "value", "keepdims", "true", "1.5", "\"s\"", "\n",      "# c\n"};
  for (int i = 0; i < 1000; ++i) {
    std::string bytes;
    for (int64_t n = rng.uniform(0, 200); n > 0; --n) bytes += static_cast<char>(rng.uniform(0, 255));
    check_input(bytes, results);
    std::string soup = rng.coin(0.8) ? "graph @g { input %x : f32[2] " : "";
    for (int64_t n = rng.uniform(0, 40); n > 0; --n) soup += rng.pick(tokens) + " ";
    check_input(soup, results);
  }
  report(results, false);  // a valid graph takes a lucky draw here
}
