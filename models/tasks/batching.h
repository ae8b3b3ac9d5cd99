#pragma once
// Padded batches and length buckets shared by the tasks (task.h describes the layout).
//
// A bucket is one (S, T) shape; an example goes to the first bucket (ascending) its
// src and target positions fit in. Within a bucket the batch size is fixed, the
// largest power of two <= tokens_per_batch / max(S, T), so a task has exactly one
// (B, S, T) shape per bucket for a given tokens_per_batch.
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <utility>
#include <vector>

#include "models/tasks/task.h"

namespace kiln::models {

struct TokenIds {
  int32_t pad = 0, bos = 1, eos = -1;  // eos -1: fixed-length targets without eos
};

struct BucketShape {
  int64_t src_len = 0, tgt_len = 0;
  bool operator==(const BucketShape&) const = default;
};

// The number of decoder positions of an example: len(tgt) + 1 with eos, len(tgt) without.
int64_t target_positions(const Example& example, int32_t eos);

// Rows per batch in a bucket (see above); kiln::Error if tokens_per_batch < 1
// or if such a batch's ids would exceed the memory limit (memory_check.h), so a
// huge --batch-tokens is refused before a batch is made.
int64_t rows_per_batch(int64_t tokens_per_batch, BucketShape shape);

// One batch of `batch_size` rows: the examples first, filler rows after.
Batch make_batch(std::span<const Example* const> rows, int64_t batch_size, BucketShape shape, const TokenIds& ids);

// Bucket lengths 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, ... below max_len, then max_len:
// few shapes (each costs a JIT compile), little padding for the many short pairs
// (de-en's train targets: 82% of the cells are tokens, against 62% with buckets from 8).
std::vector<int64_t> bucket_lengths(int64_t max_len);

// One training batch before it is made: its bucket and the indices of its examples
// (an epoch's plan is small; its batches as tensors would not be, for a large corpus).
struct BatchRows {
  std::size_t bucket = 0;
  std::vector<std::size_t> indices;
};

// An epoch as its plan and a function that makes each planned batch.
class PlannedEpoch final : public TrainEpoch {
 public:
  PlannedEpoch(std::vector<BatchRows> plan, std::function<Batch(const BatchRows&)> make)
      : plan_(std::move(plan)), make_(std::move(make)) {}
  std::size_t size() const override { return plan_.size(); }
  Batch batch(std::size_t i) const override { return make_(plan_.at(i)); }

 private:
  std::vector<BatchRows> plan_;
  std::function<Batch(const BatchRows&)> make_;
};

class Bucketing {
 public:
  Bucketing(std::vector<BucketShape> shapes, TokenIds ids);  // shapes ascending in both lengths

  const std::vector<BucketShape>& shapes() const { return shapes_; }
  // The first bucket the example fits in, or none if it is too long for every bucket.
  std::optional<std::size_t> bucket_of(const Example& example) const;
  // The same for an example of src_len source tokens and tgt_positions decoder positions.
  std::optional<std::size_t> bucket_of(int64_t src_len, int64_t tgt_positions) const;

  // The plan of one training epoch over `count` examples whose buckets bucket_of_example
  // gives (none: left out): every such example once, shuffled within and across buckets,
  // deterministic in (seed, epoch).
  std::vector<BatchRows> train_plan(std::size_t count,
                                    const std::function<std::optional<std::size_t>(std::size_t)>& bucket_of_example,
                                    uint64_t seed, int64_t epoch, int64_t tokens_per_batch) const;
  // A planned batch of `examples` (rows_per_batch rows of its bucket's shape).
  Batch make(const std::vector<Example>& examples, const BatchRows& rows, int64_t tokens_per_batch) const;

  // Every example that fits a bucket once, in batches shuffled within and across
  // buckets, deterministic in (seed, epoch).
  std::vector<Batch> train_batches(const std::vector<Example>& examples, uint64_t seed, int64_t epoch,
                                   int64_t tokens_per_batch) const;
  // Every example in exactly one batch, bucket by bucket, in example order within each.
  // kiln::Error if an example fits no bucket.
  std::vector<std::pair<std::vector<std::size_t>, Batch>> eval_batches(const std::vector<Example>& examples,
                                                                       int64_t tokens_per_batch) const;

 private:
  std::vector<std::vector<std::size_t>> group_by_bucket(const std::vector<Example>& examples, bool all_must_fit) const;
  // Consecutive slices of one bucket's examples (`group`), as planned batches.
  std::vector<BatchRows> slice_group(const std::vector<std::size_t>& group, std::size_t bucket,
                                     int64_t tokens_per_batch) const;
  // Consecutive slices of one bucket's examples (`group`), one batch each.
  std::vector<std::pair<std::vector<std::size_t>, Batch>> slice_into_batches(const std::vector<Example>& examples,
                                                                             const std::vector<std::size_t>& group,
                                                                             std::size_t bucket,
                                                                             int64_t tokens_per_batch) const;

  std::vector<BucketShape> shapes_;
  TokenIds ids_;
};

}  // namespace kiln::models
