#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <xtensor/xoperation.hpp>
#include <xtensor/xview.hpp>

#include "engine/ir/error.h"
#include "models/tasks/batching.h"
#include "models/tasks/counter_rng.h"

using namespace kiln;
using namespace kiln::models;
using doctest::Contains;

namespace {

constexpr TokenIds kIds{0, 2, 3};

// Example i has a first source token 100 + i (to recognize it in a batch) and
// deterministic pseudo-random lengths 1..max_len.
std::vector<Example> random_examples(std::size_t count, int64_t max_len) {
  CounterRng rng(7, 0);
  std::vector<Example> examples;
  for (std::size_t i = 0; i < count; ++i) {
    Example ex;
    ex.src.push_back(static_cast<int32_t>(100 + i));
    const auto src_len = 1 + rng.below(static_cast<uint64_t>(max_len));
    const auto tgt_len = 1 + rng.below(static_cast<uint64_t>(max_len));
    for (uint64_t k = 1; k < src_len; ++k) ex.src.push_back(static_cast<int32_t>(4 + k));
    for (uint64_t k = 0; k < tgt_len; ++k) ex.tgt.push_back(static_cast<int32_t>(50 + k));
    examples.push_back(ex);
  }
  return examples;
}

std::vector<BucketShape> square(const std::vector<int64_t>& lengths) {
  std::vector<BucketShape> shapes;
  for (int64_t len : lengths) shapes.push_back({len, len});
  return shapes;
}

// Checks that row r of the batch holds `ex` exactly, padded after.
void check_row(const Batch& batch, std::size_t r, const Example& ex) {
  const auto& src = batch.src.i32();
  const auto& tgt_in = batch.tgt_in.i32();
  const auto& tgt_out = batch.tgt_out.i32();
  for (std::size_t j = 0; j < src.shape(1); ++j) CHECK(src(r, j) == (j < ex.src.size() ? ex.src[j] : kIds.pad));
  for (std::size_t j = 0; j < tgt_in.shape(1); ++j) {
    const int32_t in = j == 0 ? kIds.bos : j <= ex.tgt.size() ? ex.tgt[j - 1] : kIds.pad;
    const int32_t out = j < ex.tgt.size() ? ex.tgt[j] : j == ex.tgt.size() ? kIds.eos : kIds.pad;
    CHECK(tgt_in(r, j) == in);
    CHECK(tgt_out(r, j) == out);
  }
}

}  // namespace

TEST_CASE("batching: bucket lengths and rows per batch") {
  CHECK(bucket_lengths(64) == std::vector<int64_t>{4, 6, 8, 12, 16, 24, 32, 48, 64});
  CHECK(bucket_lengths(10) == std::vector<int64_t>{4, 6, 8, 10});
  CHECK(bucket_lengths(5) == std::vector<int64_t>{4, 5});
  CHECK(bucket_lengths(3) == std::vector<int64_t>{3});
  CHECK(bucket_lengths(200) == std::vector<int64_t>{4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 200});
  CHECK_THROWS_AS(bucket_lengths(0), Error);
  CHECK(rows_per_batch(1000, {16, 16}) == 32);
  CHECK(rows_per_batch(1024, {16, 8}) == 64);
  CHECK(rows_per_batch(5, {8, 8}) == 1);
  CHECK_THROWS_WITH_AS(rows_per_batch(0, {8, 8}), Contains("tokens per batch must be positive"), Error);
}

TEST_CASE("batching: a batch is padded, shifted and counted") {
  const Example a{{5, 6, 7}, {8, 9}, "", ""};
  const Example b{{10}, {11, 12, 13, 14}, "", ""};
  const std::vector<const Example*> rows = {&a, &b};
  const Batch batch = make_batch(rows, 4, {6, 8}, kIds);
  CHECK(batch.src.shape() == Shape{4, 6});
  CHECK(batch.tgt_in.shape() == Shape{4, 8});
  CHECK(batch.tgt_out.shape() == Shape{4, 8});
  CHECK(batch.tgt_in.dtype() == DType::i32);
  CHECK(batch.rows == 2);
  CHECK(batch.src_tokens == 4);
  CHECK(batch.tgt_tokens == 3 + 5);  // tgt + eos per row
  check_row(batch, 0, a);
  check_row(batch, 1, b);
  for (std::size_t r = 2; r < 4; ++r) {  // filler: bos then pad, nothing to predict
    CHECK(batch.src.i32()(r, 0) == kIds.bos);
    CHECK(batch.tgt_in.i32()(r, 0) == kIds.bos);
    CHECK(xt::all(xt::equal(xt::view(batch.tgt_out.i32(), r), kIds.pad)));
  }
  CHECK_THROWS_WITH_AS(make_batch(rows, 2, {2, 8}, kIds), Contains("longer than its batch shape"), Error);
}

TEST_CASE("batching: eval batches hold every example once in few shapes") {
  const auto examples = random_examples(500, 40);
  const Bucketing bucketing(square(bucket_lengths(48)), kIds);
  std::vector<int> seen(examples.size(), 0);
  std::set<std::vector<int64_t>> shapes;
  for (const auto& [indices, batch] : bucketing.eval_batches(examples, 256)) {
    CHECK(std::is_sorted(indices.begin(), indices.end()));
    CHECK(batch.rows == static_cast<int64_t>(indices.size()));
    const Shape s = batch.src.shape(), t = batch.tgt_in.shape();
    shapes.insert({s[0], s[1], t[1]});
    CHECK(s[0] == rows_per_batch(256, {s[1], t[1]}));
    int64_t src_tokens = 0, tgt_tokens = 0;
    for (std::size_t r = 0; r < indices.size(); ++r) {
      const Example& ex = examples[indices[r]];
      ++seen[indices[r]];
      check_row(batch, r, ex);
      CHECK(bucketing.shapes()[*bucketing.bucket_of(ex)] == BucketShape{s[1], t[1]});
      src_tokens += static_cast<int64_t>(ex.src.size());
      tgt_tokens += static_cast<int64_t>(ex.tgt.size()) + 1;
    }
    CHECK(batch.src_tokens == src_tokens);
    CHECK(batch.tgt_tokens == tgt_tokens);
  }
  CHECK(std::all_of(seen.begin(), seen.end(), [](int n) { return n == 1; }));
  CHECK(shapes.size() <= bucketing.shapes().size());
}

TEST_CASE("batching: an example too long for every bucket") {
  auto examples = random_examples(20, 10);
  examples[3].src.resize(30, 5);
  const Bucketing bucketing(square({8, 16}), kIds);
  CHECK(!bucketing.bucket_of(examples[3]));
  CHECK_THROWS_WITH_AS(bucketing.eval_batches(examples, 64), Contains("example 3 (30 source, "), Error);
  int64_t rows = 0;
  for (const Batch& b : bucketing.train_batches(examples, 1, 0, 64)) rows += b.rows;
  CHECK(rows == 19);  // dropped from training
}

TEST_CASE("batching: training epochs are shuffled deterministically") {
  const auto examples = random_examples(300, 30);
  const Bucketing bucketing(square(bucket_lengths(32)), kIds);
  // The first source token of each real row, in batch order.
  const auto order = [&](uint64_t seed, int64_t epoch) {
    std::vector<int32_t> firsts;
    for (const Batch& b : bucketing.train_batches(examples, seed, epoch, 128)) {
      for (int64_t r = 0; r < b.rows; ++r) firsts.push_back(b.src.i32()(static_cast<std::size_t>(r), 0));
    }
    return firsts;
  };
  const auto epoch0 = order(5, 0);
  CHECK(order(5, 0) == epoch0);
  CHECK(order(5, 1) != epoch0);
  CHECK(order(6, 0) != epoch0);
  auto sorted = epoch0;
  std::sort(sorted.begin(), sorted.end());
  std::vector<int32_t> expected;
  for (std::size_t i = 0; i < examples.size(); ++i) expected.push_back(static_cast<int32_t>(100 + i));
  CHECK(sorted == expected);  // every example once per epoch
}
