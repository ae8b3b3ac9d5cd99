// ONNX model bytes through the importer: a model it accepts is a graph that
// verifies, prints as .kir that parses back to the same text, and comes with a
// value of the declared type for every param and state; anything else is a
// kiln::Error. Its corpus is replayed by test_onnx (tests/onnx/fuzz_replay_test.cpp).
#include <optional>

#include "engine/ir/error.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "tools/onnx_import/import.h"
#include "fuzz/fuzz_targets.h"

namespace kiln::fuzz {

namespace {

void check_values(const onnx::ImportedModel& m) {
  size_t persistent = 0;
  for (Value v : m.graph.declarations()) {
    const ValueInfo& decl = m.graph.value(v);
    if (decl.kind == ValueKind::input) continue;
    ++persistent;
    const auto it = m.tensors.find(decl.name);
    if (it == m.tensors.end()) throw FuzzFailure("imported " + decl.name + " has no value");
    if (!(it->second.type() == decl.type))
      throw FuzzFailure("imported " + decl.name + " is " + type_str(it->second.type()) + ", declared " +
                        type_str(decl.type));
  }
  if (persistent != m.tensors.size()) throw FuzzFailure("the import has values for names the graph lacks");
}

}  // namespace

Outcome fuzz_onnx(std::string_view bytes) {
  std::optional<onnx::ImportedModel> m;
  try {
    m = onnx::import_model_bytes(std::string(bytes), "fuzz.onnx");
  } catch (const Error&) {
    return Outcome::rejected;
  }
  if (const auto problems = verify_problems(m->graph); !problems.empty())
    throw FuzzFailure("imported graph fails verification: " + problems.front());
  check_values(*m);
  const std::string printed = print_kir(m->graph);
  if (print_kir(parse_kir(printed, "imported.kir")) != printed) throw FuzzFailure("imported graph does not round-trip");
  return Outcome::accepted;
}

}  // namespace kiln::fuzz
