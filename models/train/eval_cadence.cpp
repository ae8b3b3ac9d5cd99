#include "models/train/eval_cadence.h"

namespace kiln::models {

EvalCadence eval_cadence(const EvalCadence& given, double minutes, int64_t steps) {
  if (given.eval_every > 0 || given.eval_minutes > 0 || given.save_every > 0) return given;
  EvalCadence c;
  if (minutes > 0) {
    c.eval_minutes = minutes / kDefaultEvaluations;
  } else if (steps >= kDefaultEvaluations) {
    c.eval_every = c.save_every = (steps + kDefaultEvaluations - 1) / kDefaultEvaluations;
  }
  return c;
}

}  // namespace kiln::models
