#include "models/tasks/batch_file.h"

#include <fstream>
#include <nlohmann/json.hpp>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"

namespace kiln::models {
namespace {

nlohmann::json rows_of(const Tensor& t) {
  const auto& a = t.i32();
  nlohmann::json rows = nlohmann::json::array();
  for (size_t r = 0; r < a.shape(0); ++r) {
    nlohmann::json row = nlohmann::json::array();
    for (size_t c = 0; c < a.shape(1); ++c) row.push_back(a(r, c));
    rows.push_back(std::move(row));
  }
  return rows;
}

// A [rows, cols] i32 tensor from a list of equally long lists of ints.
Tensor tensor_of(const nlohmann::json& rows, const std::string& key) {
  if (!rows.is_array() || rows.empty() || !rows[0].is_array())
    throw Error("\"" + key + "\" must be a non-empty list of lists of ids");
  Tensor::I32 a = Tensor::I32::from_shape({rows.size(), rows[0].size()});
  for (size_t r = 0; r < rows.size(); ++r) {
    if (!rows[r].is_array() || rows[r].size() != rows[0].size())
      throw Error("\"" + key + "\" row " + std::to_string(r) + " is not a list of " + std::to_string(rows[0].size()) +
                  " ids");
    for (size_t c = 0; c < rows[r].size(); ++c) {
      if (!rows[r][c].is_number_integer()) throw Error("\"" + key + "\" holds a value that is not an integer id");
      a(r, c) = rows[r][c].get<int32_t>();
    }
  }
  return Tensor(std::move(a));
}

// Non-pad ids in the first `rows` rows (the real examples, as task.h counts them).
int64_t non_pad(const Tensor& t, int32_t pad, int64_t rows) {
  const auto& a = t.i32();
  int64_t n = 0;
  for (size_t r = 0; r < static_cast<size_t>(rows); ++r)
    for (size_t c = 0; c < a.shape(1); ++c) n += a(r, c) != pad ? 1 : 0;
  return n;
}

}  // namespace

std::string batch_file_text(const std::vector<Batch>& batches) {
  std::string text;
  for (const Batch& b : batches) {
    nlohmann::ordered_json j;
    j["src"] = rows_of(b.src);
    j["tgt_in"] = rows_of(b.tgt_in);
    j["tgt_out"] = rows_of(b.tgt_out);
    j["rows"] = b.rows;
    text += j.dump();
    text += '\n';
  }
  return text;
}

void write_batch_file(const std::string& path, const std::vector<Batch>& batches) {
  write_file_atomically(path, batch_file_text(batches));
}

std::vector<Batch> read_batch_file(const std::string& path, int32_t pad_id) {
  std::ifstream in(path);
  if (!in) throw Error(path + ": cannot read the batch file");
  std::vector<Batch> out;
  std::string line;
  for (int line_no = 1; std::getline(in, line); ++line_no) {
    try {
      const nlohmann::json j = nlohmann::json::parse(line);
      Batch b;
      b.src = tensor_of(j.at("src"), "src");
      b.tgt_in = tensor_of(j.at("tgt_in"), "tgt_in");
      b.tgt_out = tensor_of(j.at("tgt_out"), "tgt_out");
      b.rows = j.at("rows").get<int64_t>();
      const size_t n = b.src.i32().shape(0);
      if (b.tgt_in.i32().shape(0) != n || !(b.tgt_out.type() == b.tgt_in.type()) || b.rows < 0 ||
          b.rows > static_cast<int64_t>(n))
        throw Error("src, tgt_in and tgt_out must have the same rows, tgt_in and tgt_out the same shape, and rows "
                    "at most their count");
      b.src_tokens = non_pad(b.src, pad_id, b.rows);
      b.tgt_tokens = non_pad(b.tgt_out, pad_id, b.rows);
      out.push_back(std::move(b));
    } catch (const nlohmann::json::exception& e) {
      throw Error(path + ":" + std::to_string(line_no) + ": not a batch: " + e.what());
    } catch (const Error& e) {
      throw Error(path + ":" + std::to_string(line_no) + ": " + e.what());
    }
  }
  return out;
}

}  // namespace kiln::models
