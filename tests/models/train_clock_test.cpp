// The training clock (models/run/train_clock.h): it counts the time since it
// started and what the run trained before, and not the time a pause lasted
// (an evaluation, a save).
#include "models/run/train_clock.h"

#include <doctest/doctest.h>

#include <chrono>
#include <thread>

using kiln::models::TrainClock;

TEST_CASE("the training clock adds the resumed seconds and leaves out its pauses") {
  using namespace std::chrono_literals;
  TrainClock clock(100);
  clock.start();
  std::this_thread::sleep_for(50ms);
  {
    const TrainClock::Pause pause(clock);
    std::this_thread::sleep_for(400ms);
  }
  const double seconds = clock.run_seconds();
  CHECK(clock.resumed_seconds() == 100);
  CHECK(seconds >= 100.05);
  CHECK(seconds < 100.4);  // the pause's 0.4 s are not in it, whatever the machine's load adds to the 0.05 s
}
