#include "op_table.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <string>

#include "rows.h"

namespace kiln::test {

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> table = [] {
    std::vector<OpInfo> rows;
    for (auto family : {elementwise_rows, reduction_rows, normalization_rows, shape_rows, constant_rows, gather_rows,
                        matmul_rows, loss_rows, attention_rows, dropout_rows, graph_rows, collective_rows})
      for (OpInfo& row : family()) rows.push_back(std::move(row));
    std::sort(rows.begin(), rows.end(), [](const OpInfo& a, const OpInfo& b) { return a.name < b.name; });
    return rows;
  }();
  return table;
}

std::vector<const OpInfo*> rows_under_test() {
  const char* only = std::getenv("KILN_OP_TABLE_ONLY");
  std::vector<std::string> names;
  std::istringstream in(only ? only : "");
  for (std::string name; std::getline(in, name, ',');) names.push_back(name);
  std::vector<const OpInfo*> rows;
  for (const OpInfo& row : op_table())
    if (names.empty() || std::find(names.begin(), names.end(), row.name) != names.end()) rows.push_back(&row);
  return rows;
}

Rng row_rng(const OpInfo& row, uint64_t salt) {
  uint64_t seed = 1469598103934665603ull ^ salt;  // FNV-1a: the same on every standard library
  for (char c : row.name) seed = (seed ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return Rng(seed);
}

}  // namespace kiln::test
