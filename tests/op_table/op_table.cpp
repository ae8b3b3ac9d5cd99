#include "op_table.h"

#include <algorithm>
#include <cstdlib>
#include <sstream>
#include <stdexcept>
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
  // KILN_OP_TABLE_SHARD=i/n: rows i, i+n, i+2n, ... (CTest runs the forward checks in shards side by side).
  size_t shard = 0, shards = 1;
  if (const char* text = std::getenv("KILN_OP_TABLE_SHARD")) {
    char slash = 0;
    std::istringstream spec(text);
    if (!(spec >> shard >> slash >> shards) || slash != '/' || shards == 0 || shard >= shards)
      throw std::runtime_error(std::string("KILN_OP_TABLE_SHARD: expected i/n with i < n, got ") + text);
  }
  std::vector<const OpInfo*> rows;
  for (size_t i = 0; i < op_table().size(); ++i) {
    const OpInfo& row = op_table()[i];
    if (i % shards != shard) continue;
    if (names.empty() || std::find(names.begin(), names.end(), row.name) != names.end()) rows.push_back(&row);
  }
  return rows;
}

Rng row_rng(const OpInfo& row, uint64_t salt) {
  uint64_t seed = 1469598103934665603ull ^ salt;  // FNV-1a: the same on every standard library
  for (char c : row.name) seed = (seed ^ static_cast<unsigned char>(c)) * 1099511628211ull;
  return Rng(seed);
}

}  // namespace kiln::test
