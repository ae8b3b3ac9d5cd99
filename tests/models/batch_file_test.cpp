// Batch files (what kiln writes for another trainer): a round trip gives the
// same batches, and a damaged file names its line.
#include "models/tasks/batch_file.h"

#include <doctest/doctest.h>

#include "check_error.h"
#include "cli/temp_dir.h"
#include "engine/atomic_file.h"

using namespace kiln;
using namespace kiln::models;

TEST_CASE("a batch file reads back as the batches written, token counts included") {
  const auto task = make_copy_task();
  std::vector<Batch> batches = task->train_batches(7, 2, 300);
  for (auto& [indices, b] : task->eval_batches(Split::dev, 300)) batches.push_back(std::move(b));
  REQUIRE(batches.size() > 1);
  TempDir dir;
  write_batch_file(dir.file("b.jsonl"), batches);
  const std::vector<Batch> back = read_batch_file(dir.file("b.jsonl"), task->pad_id());
  REQUIRE(back.size() == batches.size());
  for (size_t i = 0; i < back.size(); ++i) {
    CHECK(back[i].src.i32() == batches[i].src.i32());
    CHECK(back[i].tgt_in.i32() == batches[i].tgt_in.i32());
    CHECK(back[i].tgt_out.i32() == batches[i].tgt_out.i32());
    CHECK(back[i].rows == batches[i].rows);
    CHECK(back[i].src_tokens == batches[i].src_tokens);
    CHECK(back[i].tgt_tokens == batches[i].tgt_tokens);
  }
}

TEST_CASE("a damaged batch file names the file and line") {
  TempDir dir;
  const auto fails = [&](const std::string& text, const std::string& part) {
    write_file_atomically(dir.file("bad.jsonl"), text);
    check_error([&] { read_batch_file(dir.file("bad.jsonl"), 0); }, {"bad.jsonl:", part});
  };
  const std::string good = R"({"src":[[1,2]],"tgt_in":[[1,3]],"tgt_out":[[3,0]],"rows":1})";
  fails(good + "\nnot json\n", ":2: not a batch");
  fails(R"({"src":[[1,2],[1]],"tgt_in":[[1,3],[1,3]],"tgt_out":[[3,0],[3,0]],"rows":2})", "row 1");
  fails(R"({"src":[[1,2]],"tgt_in":[[1,3]],"tgt_out":[[3,0]],"rows":5})", "rows at most");
  fails(R"({"src":[[1,"x"]],"tgt_in":[[1,3]],"tgt_out":[[3,0]],"rows":1})", "not an integer");
  fails(R"({"src":[[1,2]],"tgt_in":[[1,3]],"rows":1})", "not a batch");
  check_error([&] { read_batch_file(dir.file("missing.jsonl"), 0); }, {"missing.jsonl", "cannot read"});
}
