#pragma once
// A run's training time, which --minutes budgets and --eval-minutes divides:
// the wall clock of this call since it started training (compiles included: a
// user waits for them), less the time its dev evaluations and checkpoint
// writes took (they are measurements), plus what the run trained before this
// call (a resumed checkpoint's train_seconds).
#include <chrono>

namespace kiln::models {

using TrainClockTime = std::chrono::steady_clock::time_point;

double seconds_since(TrainClockTime t);

class TrainClock {
 public:
  explicit TrainClock(double resumed_seconds = 0) : resumed_seconds_(resumed_seconds) {}
  void start();  // this call's training starts now
  double resumed_seconds() const { return resumed_seconds_; }
  // The whole run's training seconds: the checkpoint's and this call's so far.
  double run_seconds() const { return resumed_seconds_ + seconds_since(start_) - paused_seconds_; }

  // The clock stands still while one lives (an evaluation, a save).
  class Pause {
   public:
    explicit Pause(TrainClock& clock) : clock_(clock), start_(std::chrono::steady_clock::now()) {}
    ~Pause() { clock_.paused_seconds_ += seconds_since(start_); }
    Pause(const Pause&) = delete;
    Pause& operator=(const Pause&) = delete;

   private:
    TrainClock& clock_;
    TrainClockTime start_;
  };

 private:
  TrainClockTime start_;
  double paused_seconds_ = 0;  // this call's evaluations and saves
  double resumed_seconds_ = 0;
};

}  // namespace kiln::models
