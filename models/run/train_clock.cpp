#include "models/run/train_clock.h"

namespace kiln::models {

double seconds_since(TrainClockTime t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

void TrainClock::start() { start_ = std::chrono::steady_clock::now(); }

}  // namespace kiln::models
