// The .kir parser and verifier: an input parses into a graph that verifies and
// round-trips through the printer, or is rejected with an error located in it.
#include "engine/ir/error.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "fuzz/fuzz_targets.h"

namespace kiln::fuzz {

Outcome fuzz_kir(std::string_view bytes) {
  constexpr std::string_view kFile = "fuzz.kir";
  std::string printed;
  try {
    const Graph g = parse_kir(bytes, std::string(kFile));
    if (const auto problems = verify_problems(g); !problems.empty())
      throw FuzzFailure("parsed graph fails verification: " + problems.front());
    printed = print_kir(g);
  } catch (const ParseError& e) {
    if (std::string_view(e.what()).substr(0, kFile.size() + 1) != std::string(kFile) + ":")
      throw FuzzFailure(std::string("parse error not located in the input: ") + e.what());
    return Outcome::rejected;
  }
  // Outside the try: the printed form of a valid graph must parse.
  if (print_kir(parse_kir(printed, "reprint.kir")) != printed) throw FuzzFailure("parsed graph does not round-trip");
  return Outcome::accepted;
}

}  // namespace kiln::fuzz
