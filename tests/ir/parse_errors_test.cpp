// Malformed .kir input: every file of tests/kir_bad/ (one problem each) and a few
// inline cases must fail with "FILE:LINE:COL: error: ..." pointing at the problem.
//
// Each corpus file starts with two comment lines:
//   # expect: <a substring of the error message>
//   # at: <line>:<col>
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "engine/ir/error.h"
#include "engine/ir/parser.h"

using namespace kiln;

namespace {

// The ParseError that parsing `text` must throw.
ParseError parse_error(const std::string& text, const std::string& file = "inline.kir") {
  try {
    parse_kir(text, file);
  } catch (const ParseError& e) {
    return e;
  }
  FAIL("parsed without error: " << text);
  return ParseError({}, "");
}

std::string header_value(const std::string& line, const std::string& key) {
  REQUIRE_MESSAGE(line.rfind(key, 0) == 0, "corpus file line should start with '" << key << "': " << line);
  return line.substr(key.size());
}

}  // namespace

TEST_CASE("every malformed file of tests/kir_bad fails at the expected place with the expected message") {
  std::vector<std::filesystem::path> files;
  for (const auto& entry :
       std::filesystem::directory_iterator(std::filesystem::path(KILN_SOURCE_DIR) / "tests/kir_bad"))
    if (entry.path().extension() == ".kir") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  CHECK(files.size() >= 25);
  for (const auto& path : files) {
    INFO(path.string());
    std::ifstream in(path);
    std::string expect_line, at_line;
    std::getline(in, expect_line);
    std::getline(in, at_line);
    const std::string expected = header_value(expect_line, "# expect: ");
    const std::string at = header_value(at_line, "# at: ");
    try {
      parse_kir_file(path.string());
      FAIL_CHECK("parsed without error");
    } catch (const ParseError& e) {
      const std::string what = e.what();
      const std::string prefix = path.string() + ":" + at + ": error: ";
      CHECK_MESSAGE(what.rfind(prefix, 0) == 0, what);
      CHECK_MESSAGE(what.find(expected) != std::string::npos, what);
      CHECK(e.loc.file == path.string());
      CHECK(std::to_string(e.loc.line) + ":" + std::to_string(e.loc.col) == at);
    }
  }
}

TEST_CASE("errors name the exact line and byte column") {
  const std::string body = "graph @g {\n  input %x : f32[2]\n";

  ParseError e = parse_error(body + "  %y = add(%x %x)\n  output %y\n}\n");
  CHECK(std::string(e.what()) == "inline.kir:3:15: error: expected ')' after operands, got '%x'");

  e = parse_error(body + "  %y = add(%x,)\n}\n");
  CHECK(std::string(e.what()) == "inline.kir:3:15: error: expected a value name like '%x' as an operand, got ')'");

  e = parse_error("", "empty.kir");
  CHECK(std::string(e.what()) == "empty.kir:1:1: error: expected 'graph @name {', got end of file (the file is empty)");

  // A tab is one byte, so one column.
  e = parse_error("graph @g {\n\tinput %x : f32[2]\n\t%y = neg(%x) ; \n}\n");
  CHECK(e.loc.line == 3);
  CHECK(e.loc.col == 15);
  CHECK(std::string(e.what()).find("unexpected character ';'") != std::string::npos);

  // A string is reported where it opens, even when the file ends inside it.
  e = parse_error("graph @g {\n  param %w : f32[2] {init=\"gl");
  CHECK(e.loc.line == 2);
  CHECK(e.loc.col == 27);

  // Verifier problems point at the node they are about.
  e = parse_error(body + "  %y = neg(%x)\n  assign(%x, %y)\n}\n");
  CHECK(e.loc.line == 4);
  CHECK(e.loc.col == 3);
  CHECK(std::string(e.what()).find("node 1 'assign': target %x is not a param or state") != std::string::npos);

  // Non-printable bytes are named by value.
  e = parse_error("graph @g {\n  \x01\n}");
  CHECK(std::string(e.what()) == "inline.kir:2:3: error: unexpected byte 0x01");
}

TEST_CASE("shape inference errors carry the Builder's message, located at the op") {
  const ParseError e =
      parse_error("graph @g {\n  input %a : f32[2,3]\n  input %b : f32[4,5]\n  %c = matmul(%a, %b)\n  output %c\n}\n");
  CHECK(e.loc.line == 4);
  CHECK(e.loc.col == 8);
  CHECK(std::string(e.what()).find("error: matmul(f32[2,3], f32[4,5]): ") != std::string::npos);
}

TEST_CASE("the parser survives pathological input") {
  // Deep nesting: the grammar has none, so this is an ordinary error, not a stack overflow.
  std::string deep = "graph @g {\n  %c = fill() {shape=";
  deep += std::string(200000, '[');
  ParseError e = parse_error(deep);
  CHECK(e.loc.line == 2);
  CHECK(e.loc.col == 23);
  CHECK(std::string(e.what()).find("expected an integer in the list, got '['") != std::string::npos);

  // A long line: columns keep counting.
  std::string wide = "graph @g {" + std::string(100000, ' ') + "!";
  e = parse_error(wide);
  CHECK(e.loc.col == 100011);

  // Huge literals of every kind.
  e = parse_error("graph @g {\n  %c = fill() {shape=[1], value=" + std::string(400, '9') + "}\n}");
  CHECK(std::string(e.what()).find("is out of range for int64") != std::string::npos);
  e = parse_error("graph @g {\n  %c = fill() {shape=[1], value=1e-99999}\n}");
  CHECK(std::string(e.what()).find("float literal 1e-99999 is out of range") != std::string::npos);
  e = parse_error("graph @g {\n  %c = fill() {shape=[-9223372036854775808]}\n}");
  CHECK(std::string(e.what()).find("error: fill()") != std::string::npos);
}
