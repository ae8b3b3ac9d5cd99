// Reference-kernel checks generated from the op table: for each row with an
// expected function, the interpreter's results on every forward sample against
// it (within the row's tolerance, which also covers std::'s exp, log and tanh
// against the reference's).
#include <doctest/doctest.h>

#include "engine/interpreter.h"
#include "op_graph.h"
#include "op_table.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("op table: reference kernels give the rows' expected results") {
  for (const OpInfo* row : rows_under_test()) {
    if (!row->expected) continue;
    Rng rng = row_rng(*row);
    for (const Sample& s : row->samples(rng)) {
      INFO("op " << row->name << " " << s.note);
      const Graph g = sample_graph(*row, s, no_wrap);
      Interpreter interp(g);
      for (const auto& [name, t] : sample_bindings(g, s)) interp.bind(name, t);
      interp.run();
      const std::vector<Tensor> want = row->expected(s);
      REQUIRE(want.size() == g.outputs().size());
      for (size_t i = 0; i < want.size(); ++i)
        CHECK(compare_tensors(want[i], interp.output(g.name_of(g.outputs()[i])), row->tolerance) == "");
    }
  }
}
