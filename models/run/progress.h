#pragma once
// Progress lines. The trainer's (ProgressLine): step, loss, tokens/s, learning rate and ETA.
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

// Progress over items of known (or unknown) count, for the commands that work
// through long inputs: eval and translate (sentences), prepare (sentences),
// average (checkpoints): "decoded 120 of 893 sentences  45.2 sentences/s  ETA 17s".
// On a terminal the line is rewritten in place once the work has taken a
// second, and left on screen at the end; elsewhere (a pipe, a log) a line is
// printed once `quiet_seconds` have passed without one, and the last count at
// the end if any line was printed: a short input prints nothing, a long one
// shows it is alive, as the trainer's ProgressLine does.
class ItemProgress {
 public:
  // total <= 0: unknown (no "of N", no ETA).
  ItemProgress(std::ostream& out, bool live, std::string verb, std::string items, int64_t total,
               double quiet_seconds = 30, double live_after_seconds = 1);
  ~ItemProgress();  // the last count, if any line was shown
  ItemProgress(const ItemProgress&) = delete;
  ItemProgress& operator=(const ItemProgress&) = delete;

  void advance(int64_t items);
  // "decoded 120 of 893 sentences  45.2 sentences/s  ETA 17s" after `seconds`.
  std::string text(double seconds) const;

 private:
  void show(double seconds);

  std::ostream& out_;
  bool live_;
  std::string verb_, items_;
  int64_t total_, done_ = 0;
  double quiet_seconds_, live_after_seconds_;
  std::chrono::steady_clock::time_point start_;
  double last_shown_ = 0;  // seconds after the start
  bool shown_ = false;
  size_t live_width_ = 0;
};

}  // namespace kiln::models
