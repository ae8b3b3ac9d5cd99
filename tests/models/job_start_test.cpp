// How the ranks of a data-parallel job start (models/train/job_start.h): they
// check their settings, binary and data, in that order, an error naming what
// differs and both values; and every rank ends with rank 0's tensors.
#include "models/train/job_start.h"

#include <doctest/doctest.h>

#include "check_error.h"
#include "trainer_parts_fixtures.h"

using namespace kiln;
using namespace kiln::models;

namespace {

// Rank `rank` of two whose rank 0 holds two tensors of three 1s, and whose other
// rank's values differ at the gathers of `differing`.
std::unique_ptr<test::TwoRankJob> job_of(int rank, std::map<size_t, std::string> differing = {}) {
  auto job = std::make_unique<test::TwoRankJob>();
  job->rank_ = rank;
  job->differing = std::move(differing);
  const std::vector<float> ones(6, 1.0f);
  job->rank0_bytes = std::string(reinterpret_cast<const char*>(ones.data()), ones.size() * sizeof(float));
  return job;
}

std::map<std::string, Tensor> zero_tensors() {
  return {{"a", Tensor(Tensor::F32(xt::zeros<float>({3})))}, {"b", Tensor(Tensor::F32(xt::zeros<float>({3})))}};
}

}  // namespace

TEST_CASE("the ranks of a job start on rank 0's tensors once their settings, binary and data agree") {
  const std::unique_ptr<Task> task = make_copy_task();
  TrainerState state;
  state.batch_tokens = 40;
  BatchStream batches(*task, state);
  std::map<std::string, Tensor> tensors = zero_tensors();
  {
    const test::InstalledCollectives installed(job_of(1));
    start_ranks_together("settings", *task, batches, tensors);
  }
  for (const auto& [name, t] : tensors) {
    CAPTURE(name);
    CHECK(t.f32() == xt::ones<float>({3}));
  }
  tensors = zero_tensors();
  {
    const test::InstalledCollectives installed(job_of(0));  // rank 0 keeps its own
    start_ranks_together("settings", *task, batches, tensors);
  }
  CHECK(tensors.at("a").f32() == xt::zeros<float>({3}));
}

TEST_CASE("ranks that disagree on their settings, binary or data are refused, naming what and both values") {
  const std::unique_ptr<Task> task = make_copy_task();
  TrainerState state;
  state.batch_tokens = 40;
  BatchStream batches(*task, state);
  std::map<std::string, Tensor> tensors = zero_tensors();
  const auto refused = [&](size_t gather, const std::string& other, std::initializer_list<std::string> parts) {
    const test::InstalledCollectives installed(job_of(1, {{gather, other}}));
    check_error([&] { start_ranks_together("settings", *task, batches, tensors); }, parts);
    CHECK(tensors.at("a").f32() == xt::zeros<float>({3}));  // nothing taken from rank 0
  };
  refused(0, "0123456789abcdef",
          {"the ranks disagree on the training settings (flags, recipe and checkpoint resolved): rank 0 has "
           "0123456789abcdef, rank 1 has "});
  refused(1, "fedcba9876543210", {"the ranks disagree on the kiln binary (its bytes): rank 0 has fedcba9876543210"});
  refused(2, "12 words, 1 batches, the first none",
          {"the ranks disagree on the task's data (vocabulary and the epoch's first batch): rank 0 has 12 words, 1 "
           "batches, the first none, rank 1 has 11 words, 1 batches, the first "});
}
