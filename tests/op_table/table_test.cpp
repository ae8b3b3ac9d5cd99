// The table itself: one row per registered op and no other, and every row
// either runs each generated check or says why it does not apply.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>

#include "engine/ir/op_def.h"
#include "op_table.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("op table: the rows are exactly the registered ops") {
  std::set<std::string> registered, rows;
  for (const OpDef* def : OpRegistry::global().all()) registered.insert(def->name);
  for (const OpInfo& row : op_table()) {
    CHECK_MESSAGE(rows.insert(row.name).second, "op '" << row.name << "' has two rows");
    CHECK_MESSAGE(registered.count(row.name), "row '" << row.name << "' names no registered op");
  }
  for (const std::string& name : registered)
    CHECK_MESSAGE(rows.count(name), "op '" << name << "' is registered but has no row in tests/op_table/");
}

TEST_CASE("op table: every row states what it supports, or why a check does not apply") {
  for (const OpInfo& row : op_table()) {
    INFO("op " << row.name);
    const OpDef* def = OpRegistry::global().find(row.name);
    if (!def) continue;  // reported above
    REQUIRE(row.samples);
    // One dtype list per operand; a variadic op's last covers the rest.
    const size_t lists = static_cast<size_t>(def->max_operands < 0 ? def->min_operands : def->max_operands);
    CHECK(row.dtypes.size() == lists);
    CHECK_MESSAGE(static_cast<bool>(row.grad_samples) == row.no_gradient.empty(),
                  "a row has gradient samples or says why not (no_gradient), not both");
    if (row.grad_samples) CHECK_MESSAGE(def->gradient, "gradient samples for an op with no gradient rule");
    if (!row.no_grad_of_grad.empty()) CHECK_MESSAGE(row.grad_samples, "no_grad_of_grad on a row with no gradient");
    CHECK_MESSAGE(row.invalid.empty() != row.no_invalid.empty(),
                  "a row lists invalid signatures or says why there are none (no_invalid), not both");
    // Every dtype the row claims is sampled at its operand.
    Rng rng = row_rng(row);
    const std::vector<Sample> samples = row.samples(rng);
    CHECK(!samples.empty());
    for (size_t i = 0; i < row.dtypes.size(); ++i)
      for (DType d : row.dtypes[i]) {
        const bool sampled = std::any_of(samples.begin(), samples.end(), [&](const Sample& s) {
          return i < s.operands.size() && s.operands[i].dtype() == d;
        });
        CHECK_MESSAGE(sampled, "operand " << i << " accepts " << dtype_name(d) << " but no sample has it");
      }
  }
}
