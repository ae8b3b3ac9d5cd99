#include <doctest/doctest.h>

#include <set>
#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

#include "engine/ir/error.h"
#include "models/tasks/batching.h"
#include "models/tasks/task.h"

using namespace kiln;
using namespace kiln::models;
using doctest::Contains;

TEST_CASE("copy task: ids and held-out sets") {
  const auto task = make_copy_task();
  CHECK(task->name() == "copy");
  CHECK(task->vocab_size() == 11);
  CHECK(task->pad_id() == 0);
  CHECK(task->bos_id() == 1);
  CHECK(task->eos_id() == -1);
  CHECK(task->never_generated() == std::vector<int32_t>{0});  // 1 starts sequences and is copied too
  CHECK(task->examples(Split::train).empty());
  REQUIRE(task->examples(Split::dev).size() == 200);
  REQUIRE(task->examples(Split::test).size() == 500);
  std::set<std::vector<int32_t>> seen;
  for (Split split : {Split::dev, Split::test}) {
    for (const Example& ex : task->examples(split)) {
      REQUIRE(ex.src.size() == 10);
      CHECK(ex.src[0] == 1);
      for (int32_t id : ex.src) CHECK((id >= 1 && id <= 10));
      CHECK(ex.tgt == std::vector<int32_t>(ex.src.begin() + 1, ex.src.end()));
      CHECK(task->encode(ex.src_text) == ex.src);
      CHECK(task->decode(ex.tgt) == ex.tgt_text);
      CHECK(ex.src_text == ex.tgt_text);
      CHECK(task->max_output_len(ex) == 9);
      CHECK(seen.insert(ex.src).second);  // distinct, and dev and test disjoint
    }
  }
  // Fixed sets: another task object draws the same ones.
  CHECK(make_copy_task()->examples(Split::test)[123].src == task->examples(Split::test)[123].src);
}

TEST_CASE("copy task: training batches shift the sequence and avoid held-out sequences") {
  const auto task = make_copy_task();
  std::set<std::vector<int32_t>> held_out;
  for (Split split : {Split::dev, Split::test})
    for (const Example& ex : task->examples(split)) held_out.insert(ex.src);
  const auto batches = task->train_batches(42, 7, 800);
  REQUIRE(batches.size() == 1);
  const Batch& batch = batches[0];
  CHECK(batch.src.shape() == Shape{64, 10});  // 800 / 10 = 80 rows, rounded down to a power of two
  CHECK(batch.tgt_in.shape() == Shape{64, 9});
  CHECK(batch.tgt_out.shape() == Shape{64, 9});
  CHECK(batch.rows == 64);
  CHECK(batch.src_tokens == 640);
  CHECK(batch.tgt_tokens == 576);
  const auto& src = batch.src.i32();
  CHECK(xt::all(xt::equal(xt::view(src, xt::all(), 0), 1)));
  CHECK(xt::all(src >= 1 && src <= 10));
  CHECK(batch.tgt_in.i32() == xt::view(src, xt::all(), xt::range(0, 9)));
  CHECK(batch.tgt_out.i32() == xt::view(src, xt::all(), xt::range(1, 10)));
  for (std::size_t r = 0; r < 64; ++r) {
    const auto row = xt::view(src, r);
    CHECK(!held_out.contains(std::vector<int32_t>(row.begin(), row.end())));
  }
  CHECK(task->train_batches(42, 7, 800)[0].src.i32() == src);
  CHECK(task->train_batches(42, 8, 800)[0].src.i32() != src);
  CHECK(task->train_batches(43, 7, 800)[0].src.i32() != src);
}

TEST_CASE("copy task: eval batches cover the dev set") {
  const auto task = make_copy_task();
  std::vector<int> seen(200, 0);
  for (const auto& [indices, batch] : task->eval_batches(Split::dev, 640)) {
    CHECK(batch.src.shape() == Shape{64, 10});
    for (std::size_t r = 0; r < indices.size(); ++r) {
      ++seen[indices[r]];
      const auto row = xt::view(batch.src.i32(), r);
      CHECK(std::vector<int32_t>(row.begin(), row.end()) == task->examples(Split::dev)[indices[r]].src);
    }
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
}

TEST_CASE("copy task: text in and out") {
  const auto task = make_copy_task();
  CHECK(task->encode(" 1 2 3 4 5  6 7 8 9 10\n") == std::vector<int32_t>{1, 2, 3, 4, 5, 6, 7, 8, 9, 10});
  CHECK(task->decode({2, 3, 4, 5, 6, 7, 8, 9, 10}) == "1 2 3 4 5 6 7 8 9 10");
  CHECK_THROWS_WITH_AS(task->encode("1 2 x 4"), Contains("bad token 'x'"), Error);
  CHECK_THROWS_WITH_AS(task->encode("1 0 3"), Contains("bad token '0' (expected integers 1..10"), Error);
  CHECK_THROWS_WITH_AS(task->encode("1 11"), Contains("bad token '11'"), Error);
  CHECK_THROWS_WITH_AS(task->encode("1 2.5"), Contains("bad token '2.5'"), Error);
  CHECK_THROWS_WITH_AS(task->encode("99999999999999999999"), Contains("bad token"), Error);
  CHECK_THROWS_WITH_AS(task->encode("  "), Contains("empty"), Error);
}

TEST_CASE("copy task: options are checked") {
  CHECK_THROWS_WITH_AS(make_copy_task({.vocab = 2}), Contains("vocabulary"), Error);
  CHECK_THROWS_WITH_AS(make_copy_task({.length = 1}), Contains("at least 2 tokens"), Error);
  CHECK_THROWS_WITH_AS(make_copy_task({.vocab = 3, .length = 4}), Contains("too large"), Error);
  const auto small = make_copy_task({.vocab = 5, .length = 6, .dev_size = 10, .test_size = 20});
  CHECK(small->examples(Split::test).size() == 20);
  CHECK(small->train_batches(1, 0, 100)[0].src.shape() == Shape{16, 6});
}
