#pragma once
// A copy-task training run small enough for the interpreter: for tests of the
// trainer's bookkeeping, not its speed. Every recipe setting is left unset.
#include <cstdint>
#include <ostream>
#include <string>

#include "models/train/trainer.h"

namespace kiln::test {

inline models::TrainOptions interpreter_run(const std::string& dir, int64_t steps, std::ostream& log) {
  models::TrainOptions o;
  o.task = "copy";
  o.checkpoint_dir = dir;
  o.steps = steps;
  o.d_model = 32, o.heads = 2, o.d_ff = 64, o.layers = 1;
  o.exec.backend = "interp";
  o.eval_sentences = 10;
  o.log = &log;
  return o;
}

}  // namespace kiln::test
