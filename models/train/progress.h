#pragma once
// The trainer's progress line: step, loss, tokens/s, learning rate and ETA.
// On a terminal it is rewritten in place (\r); elsewhere (a log file, a pipe)
// one line is printed every `every` steps so logs stay readable, and at least
// one every `quiet_seconds` however few the steps, so a slow or short run
// through a pipe still shows it is alive.
#include <chrono>
#include <cstdint>
#include <iosfwd>
#include <string>

namespace kiln::models {

struct ProgressStats {
  int64_t step = 0;
  double loss = 0;
  double tokens_per_second = 0;
  double lr = 0;
  double eta_seconds = -1;  // < 0: unknown
};

// "step 120  loss 2.3456  12.3k tok/s  lr 1.23e-04  ETA 3m12s"
std::string progress_text(const ProgressStats& s);
// "45s", "3m12s", "1h02m"
std::string duration_text(double seconds);

class ProgressLine {
 public:
  ProgressLine(std::ostream& out, bool live, int64_t every, double quiet_seconds = 30);
  ~ProgressLine();  // ends a live line, leaving it on screen
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  void update(const ProgressStats& s);
  // A line of its own (an evaluation, a warning), printed above a live line.
  void message(const std::string& line);

 private:
  void clear_live();

  std::ostream& out_;
  bool live_;
  int64_t every_;
  double quiet_seconds_;
  std::chrono::steady_clock::time_point last_line_;  // of the last line printed (not live), or the start
  size_t live_width_ = 0;  // characters of the live line on screen
};

}  // namespace kiln::models
