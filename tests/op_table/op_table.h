#pragma once
// The op table: one OpInfo row per registered op, from which the suite
// generates every op's forward, gradient, grad-of-grad, bad-input and
// completeness checks (README.md).
#include <vector>

#include "op_info.h"

namespace kiln::test {

// Every row, sorted by op name.
const std::vector<OpInfo>& op_table();

// The rows the generated checks run: all, or those named in the comma-separated
// environment variable KILN_OP_TABLE_ONLY (to debug one op), and of those rows
// i, i+n, ... with KILN_OP_TABLE_SHARD=i/n (CTest's shards).
std::vector<const OpInfo*> rows_under_test();

// A random generator seeded from the row's name, so each row's samples stay the
// same whatever other rows do.
Rng row_rng(const OpInfo& row, uint64_t salt = 0);

}  // namespace kiln::test
