#pragma once
// When a run evaluates on dev and saves: every --eval-every steps, every
// --eval-minutes of training (each also a save) and every --save-every steps.
// A run given none of the three evaluates and saves at each fifth of its budget
// (--minutes M: every M/5 minutes; --steps N: every N/5 steps rounded up, when
// N is 5 or more), so that without planning ahead it keeps snapshots to average
// and evaluated checkpoints to choose from.
#include <cstdint>

namespace kiln::models {

inline constexpr int kDefaultEvaluations = 5;  // points of a run given no cadence

struct EvalCadence {
  int64_t eval_every = 0;   // steps; 0: none
  double eval_minutes = 0;  // minutes of training, each point also a save; 0: none
  int64_t save_every = 0;   // steps; 0: none
};

// The cadence given, or the default one for the budget (minutes or steps, one of them > 0).
EvalCadence eval_cadence(const EvalCadence& given, double minutes, int64_t steps);

}  // namespace kiln::models
