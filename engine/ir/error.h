#pragma once
// Errors raised by the IR, the builder, the verifier and the kernels. Every
// user-facing failure is one of these, so the CLI can print it and exit non-zero.
#include <stdexcept>
#include <string>

namespace kiln {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A position in a source text (1-based line and column).
struct SourceLoc {
  std::string file;
  int line = 0;
  int col = 0;
  std::string str() const { return file + ":" + std::to_string(line) + ":" + std::to_string(col); }
};

// A .kir syntax or semantic error at a known place; what() is "FILE:LINE:COL: error: MSG".
struct ParseError : Error {
  ParseError(SourceLoc loc, const std::string& msg)
      : Error(loc.str() + ": error: " + msg), loc(std::move(loc)) {}
  SourceLoc loc;
};

}  // namespace kiln
