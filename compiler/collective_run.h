#pragma once
// The collectives of one run of a program (schedule/program.h): each start
// copies the operands into the results (unless the planner put a result over
// its operand) and starts a non-blocking sum over the ranks on every result;
// between kernels the run tests the ones in flight, which lets MPI move their
// data while the kernels compute; each wait blocks until its sums are there.
// A run that throws leaves its collectives in flight: under MPI the job then
// ends (the trainer aborts it), and the arena they write stays allocated with
// its workspace.
#include <cstdint>
#include <vector>

#include "compiler/run_profile.h"
#include "compiler/schedule/program.h"

namespace kiln::compiler {

class CollectiveRun {
 public:
  // `profile`: where the collectives' spans go, or nullptr.
  CollectiveRun(const Program& p, const std::vector<void*>& ptrs, RunProfile* profile);

  // Runs the events before kernel call `call` (p.calls.size(): those after the last).
  void before_call(size_t call);
  // Tests the collectives in flight.
  void test_in_flight();

 private:
  void start(size_t collective);
  void wait(size_t collective);

  const Program& p_;
  const std::vector<void*>& ptrs_;
  RunProfile* profile_;
  size_t next_event_ = 0;
  std::vector<std::vector<int64_t>> handles_;  // per collective, one per result
  std::vector<size_t> span_of_;                // per collective: its span in profile_
  std::vector<size_t> in_flight_;              // started, not waited for
};

}  // namespace kiln::compiler
