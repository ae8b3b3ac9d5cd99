// Determinism: the same seed and thread count give a bit-identical loss
// trajectory and identical params, on the JIT (the kernel schedule is fixed at
// compile time: each parallel loop splits its range the same way every run, and
// every reduction adds in a fixed order within its task), whatever the thread
// count. The README says what does change results.
#include <doctest/doctest.h>

#include <cstring>
#include <sstream>

#include "cli/temp_dir.h"
#include "compiler/runtime/kiln_runtime.h"
#include "models/checkpoint.h"
#include "models/train/trainer.h"

using namespace kiln;
using namespace kiln::models;

namespace {

struct Run {
  std::vector<double> losses;
  Checkpoint checkpoint;
};

Run train_copy(int threads, uint64_t seed) {
  TempDir dir;
  std::ostringstream log;
  TrainOptions o;
  o.task = "copy";
  o.checkpoint_dir = dir.file("ckpt");
  o.steps = 12;
  o.seed = seed;
  o.d_model = 32, o.heads = 2, o.d_ff = 64, o.layers = 1;
  o.eval_sentences = 4;
  o.exec.threads = threads;
  o.log = &log;
  const TrainResult r = train(o);
  kiln_set_num_threads(0);
  Run run;
  for (const EvalPoint& p : r.train_losses) run.losses.push_back(p.loss);
  run.checkpoint = load_checkpoint(o.checkpoint_dir);
  return run;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.type() == b.type() && std::memcmp(a.data(), b.data(), static_cast<size_t>(a.numel()) * 4) == 0;
}

}  // namespace

TEST_CASE("the same seed and thread count give a bit-identical loss trajectory and params") {
  for (int threads : {1, 2}) {
    INFO(threads, " threads");
    const Run a = train_copy(threads, 7), b = train_copy(threads, 7);
    REQUIRE(a.losses.size() == 12);
    CHECK(a.losses == b.losses);  // exact: == on doubles
    for (const auto& [name, t] : a.checkpoint.tensors) {
      INFO("tensor ", name);
      CHECK(same_bits(t, b.checkpoint.tensors.at(name)));
    }
  }
  // A different seed is a different run (the comparison above is not between constants).
  CHECK(train_copy(2, 8).losses != train_copy(2, 7).losses);
}

TEST_CASE("the thread count does not change the trajectory") {
  // Parallel loops split their work into tasks of a fixed grain, whatever the
  // thread count, and no sum crosses tasks in a thread-dependent order.
  const Run one = train_copy(1, 7);
  for (int threads : {2, 3}) {
    INFO(threads, " threads");
    const Run other = train_copy(threads, 7);
    CHECK(one.losses == other.losses);
    for (const auto& [name, t] : one.checkpoint.tensors) CHECK(same_bits(t, other.checkpoint.tensors.at(name)));
  }
}
