#include "random_program.h"

#include <algorithm>
#include <random>
#include <string>

using kiln::compiler::PlanBuffer;
using kiln::compiler::PlanStep;

namespace {

class Generator {
 public:
  explicit Generator(uint32_t seed) : rng_(seed) {}

  RandomProgram run(int n_steps) {
    const int externals = pick(0, 4);
    for (int i = 0; i < externals; ++i) {
      externals_.push_back(add_buffer(std::string("ext") + std::to_string(i), size(), true));
      readable_.push_back(externals_.back());
    }
    for (int s = 0; s < n_steps; ++s) add_step(s);
    return std::move(program_);
  }

 private:
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }
  bool chance(double p) { return std::bernoulli_distribution(p)(rng_); }

  int64_t size() {
    static const int64_t common[] = {0, 64, 100, 256, 1000, 4096};
    if (chance(0.7)) return common[pick(0, 5)];
    return pick(1, 5000);
  }

  int add_buffer(std::string name, int64_t bytes, bool external) {
    PlanBuffer b;
    b.name = std::move(name);
    b.bytes = bytes;
    b.external = external;
    b.live_out = !external && chance(0.1);
    program_.buffers.push_back(std::move(b));
    return static_cast<int>(program_.buffers.size()) - 1;
  }

  // Mostly recent buffers, as real programs read what was just computed; sometimes any older one.
  int pick_readable() {
    const int n = static_cast<int>(readable_.size());
    if (chance(0.7)) return readable_[pick(std::max(0, n - 8), n - 1)];
    return readable_[pick(0, n - 1)];
  }

  void add_step(int s) {
    PlanStep step;
    step.name = std::string("k") + std::to_string(s);
    if (!readable_.empty())
      for (int i = pick(0, 3); i > 0; --i) step.reads.push_back(pick_readable());
    for (int i = pick(1, 3); i > 0; --i) {
      if (!externals_.empty() && chance(0.05)) {  // an assign to state
        step.writes.push_back(externals_[pick(0, static_cast<int>(externals_.size()) - 1)]);
        continue;
      }
      // Often the size of an operand, so an in-place pair fits.
      const bool same = !step.reads.empty() && chance(0.5);
      const int64_t bytes =
          same ? program_.buffers[step.reads[pick(0, static_cast<int>(step.reads.size()) - 1)]].bytes : size();
      step.writes.push_back(add_buffer(std::string("t") + std::to_string(program_.buffers.size()), bytes, false));
    }
    for (int r : step.reads)
      for (int w : step.writes)
        if (chance(0.3)) step.in_place.emplace_back(r, w);
    for (int w : step.writes)
      if (!program_.buffers[w].external) readable_.push_back(w);
    program_.steps.push_back(std::move(step));
  }

  std::mt19937 rng_;
  RandomProgram program_;
  std::vector<int> externals_;
  std::vector<int> readable_;
};

}  // namespace

RandomProgram random_program(uint32_t seed, int n_steps) { return Generator(seed).run(n_steps); }
