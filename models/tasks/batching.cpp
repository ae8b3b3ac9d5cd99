#include "models/tasks/batching.h"

#include <algorithm>
#include <bit>

#include "engine/ir/error.h"
#include "engine/tensor/memory_check.h"
#include "models/tasks/counter_rng.h"

namespace kiln::models {

int64_t target_positions(const Example& example, int32_t eos) {
  return static_cast<int64_t>(example.tgt.size()) + (eos >= 0 ? 1 : 0);
}

int64_t rows_per_batch(int64_t tokens_per_batch, BucketShape shape) {
  if (tokens_per_batch < 1) throw Error("tokens per batch must be positive, got " + std::to_string(tokens_per_batch));
  const int64_t fit = tokens_per_batch / std::max(shape.src_len, shape.tgt_len);
  const int64_t rows = fit < 1 ? 1 : static_cast<int64_t>(std::bit_floor(static_cast<uint64_t>(fit)));
  // Checked before any batch is made: make_batch's src, tgt_in and tgt_out ids.
  checked_bytes(static_cast<uint64_t>(rows), sizeof(int32_t) * static_cast<uint64_t>(shape.src_len + 2 * shape.tgt_len),
                "a batch of " + std::to_string(tokens_per_batch) + " tokens (" + std::to_string(rows) + " rows of " +
                    std::to_string(shape.src_len) + " source and " + std::to_string(shape.tgt_len) +
                    " target positions)");
  return rows;
}

Batch make_batch(std::span<const Example* const> rows, int64_t batch_size, BucketShape shape, const TokenIds& ids) {
  const auto b = static_cast<std::size_t>(batch_size);
  const auto s = static_cast<std::size_t>(shape.src_len), t = static_cast<std::size_t>(shape.tgt_len);
  Tensor::I32 src = xt::full_like(Tensor::I32::from_shape({b, s}), ids.pad);
  Tensor::I32 tgt_in = xt::full_like(Tensor::I32::from_shape({b, t}), ids.pad);
  Tensor::I32 tgt_out = tgt_in;
  Batch batch;
  batch.rows = static_cast<int64_t>(rows.size());
  for (std::size_t r = 0; r < rows.size(); ++r) {
    const Example& ex = *rows[r];
    if (ex.src.size() > s || static_cast<std::size_t>(target_positions(ex, ids.eos)) > t)
      throw Error("example longer than its batch shape [" + std::to_string(s) + "," + std::to_string(t) + "]");
    std::copy(ex.src.begin(), ex.src.end(), &src(r, 0));
    std::vector<int32_t> full = {ids.bos};
    full.insert(full.end(), ex.tgt.begin(), ex.tgt.end());
    if (ids.eos >= 0) full.push_back(ids.eos);
    std::copy(full.begin(), full.end() - 1, &tgt_in(r, 0));
    std::copy(full.begin() + 1, full.end(), &tgt_out(r, 0));
    batch.src_tokens += static_cast<int64_t>(ex.src.size());
    batch.tgt_tokens += static_cast<int64_t>(full.size() - 1);
  }
  for (std::size_t r = rows.size(); r < b; ++r) src(r, 0) = tgt_in(r, 0) = ids.bos;  // filler rows
  batch.src = std::move(src);
  batch.tgt_in = std::move(tgt_in);
  batch.tgt_out = std::move(tgt_out);
  return batch;
}

std::vector<int64_t> bucket_lengths(int64_t max_len) {
  if (max_len < 1) throw Error("max length must be positive, got " + std::to_string(max_len));
  std::vector<int64_t> lengths;
  for (int64_t pow = 4; pow < max_len; pow *= 2) {
    lengths.push_back(pow);
    if (pow + pow / 2 < max_len) lengths.push_back(pow + pow / 2);
  }
  lengths.push_back(max_len);
  return lengths;
}

Bucketing::Bucketing(std::vector<BucketShape> shapes, TokenIds ids) : shapes_(std::move(shapes)), ids_(ids) {
  for (std::size_t i = 1; i < shapes_.size(); ++i) {
    if (shapes_[i].src_len < shapes_[i - 1].src_len || shapes_[i].tgt_len < shapes_[i - 1].tgt_len)
      throw Error("bucket shapes must be ascending");
  }
}

std::optional<std::size_t> Bucketing::bucket_of(const Example& example) const {
  return bucket_of(static_cast<int64_t>(example.src.size()), target_positions(example, ids_.eos));
}

std::optional<std::size_t> Bucketing::bucket_of(int64_t src_len, int64_t tgt_positions) const {
  for (std::size_t i = 0; i < shapes_.size(); ++i) {
    if (src_len <= shapes_[i].src_len && tgt_positions <= shapes_[i].tgt_len) return i;
  }
  return std::nullopt;
}

std::vector<std::vector<std::size_t>> Bucketing::group_by_bucket(const std::vector<Example>& examples,
                                                                 bool all_must_fit) const {
  std::vector<std::vector<std::size_t>> groups(shapes_.size());
  for (std::size_t i = 0; i < examples.size(); ++i) {
    if (const auto bucket = bucket_of(examples[i])) {
      groups[*bucket].push_back(i);
    } else if (all_must_fit) {
      throw Error("example " + std::to_string(i) + " (" + std::to_string(examples[i].src.size()) + " source, " +
                  std::to_string(examples[i].tgt.size()) + " target tokens) fits no bucket");
    }
  }
  return groups;
}

std::vector<BatchRows> Bucketing::slice_group(const std::vector<std::size_t>& group, std::size_t bucket,
                                              int64_t tokens_per_batch) const {
  const auto rows = static_cast<std::size_t>(rows_per_batch(tokens_per_batch, shapes_[bucket]));
  std::vector<BatchRows> plan;
  for (std::size_t start = 0; start < group.size(); start += rows)
    plan.push_back({bucket, std::vector<std::size_t>(group.begin() + static_cast<std::ptrdiff_t>(start),
                                                     group.begin() + static_cast<std::ptrdiff_t>(
                                                                         std::min(group.size(), start + rows)))});
  return plan;
}

Batch Bucketing::make(const std::vector<Example>& examples, const BatchRows& rows, int64_t tokens_per_batch) const {
  std::vector<const Example*> slice;
  for (std::size_t i : rows.indices) slice.push_back(&examples.at(i));
  return make_batch(slice, rows_per_batch(tokens_per_batch, shapes_.at(rows.bucket)), shapes_[rows.bucket], ids_);
}

std::vector<std::pair<std::vector<std::size_t>, Batch>> Bucketing::slice_into_batches(
    const std::vector<Example>& examples, const std::vector<std::size_t>& group, std::size_t bucket,
    int64_t tokens_per_batch) const {
  std::vector<std::pair<std::vector<std::size_t>, Batch>> batches;
  for (BatchRows& rows : slice_group(group, bucket, tokens_per_batch)) {
    Batch batch = make(examples, rows, tokens_per_batch);
    batches.emplace_back(std::move(rows.indices), std::move(batch));
  }
  return batches;
}

std::vector<BatchRows> Bucketing::train_plan(
    std::size_t count, const std::function<std::optional<std::size_t>(std::size_t)>& bucket_of_example,
    uint64_t seed, int64_t epoch, int64_t tokens_per_batch) const {
  CounterRng rng(seed, static_cast<uint64_t>(epoch));
  std::vector<std::vector<std::size_t>> groups(shapes_.size());
  for (std::size_t i = 0; i < count; ++i)
    if (const auto bucket = bucket_of_example(i)) groups.at(*bucket).push_back(i);
  std::vector<BatchRows> plan;
  for (std::size_t b = 0; b < shapes_.size(); ++b) {
    rng.shuffle(groups[b]);
    for (BatchRows& rows : slice_group(groups[b], b, tokens_per_batch)) plan.push_back(std::move(rows));
  }
  rng.shuffle(plan);
  return plan;
}

std::vector<Batch> Bucketing::train_batches(const std::vector<Example>& examples, uint64_t seed, int64_t epoch,
                                            int64_t tokens_per_batch) const {
  std::vector<Batch> batches;
  for (const BatchRows& rows : train_plan(
           examples.size(), [&](std::size_t i) { return bucket_of(examples[i]); }, seed, epoch, tokens_per_batch))
    batches.push_back(make(examples, rows, tokens_per_batch));
  return batches;
}

std::vector<std::pair<std::vector<std::size_t>, Batch>> Bucketing::eval_batches(const std::vector<Example>& examples,
                                                                                int64_t tokens_per_batch) const {
  const auto groups = group_by_bucket(examples, true);
  std::vector<std::pair<std::vector<std::size_t>, Batch>> batches;
  for (std::size_t b = 0; b < shapes_.size(); ++b) {
    for (auto& item : slice_into_batches(examples, groups[b], b, tokens_per_batch)) batches.push_back(std::move(item));
  }
  return batches;
}

}  // namespace kiln::models
