// The progress lines (models/run/progress.h): the trainer's, live on a terminal and
// through a pipe a line every N steps and at least one every so many seconds; and
// ItemProgress, the commands' over sentences and checkpoints.
#include <doctest/doctest.h>

#include <chrono>
#include <sstream>
#include <thread>

#include "models/run/progress.h"

using namespace kiln::models;

namespace {

ProgressStats at(int64_t step) { return {step, 2.5, 1000, 1e-4, 30}; }

int lines(const std::string& s) {
  int n = 0;
  for (char c : s) n += c == '\n';
  return n;
}

}  // namespace

TEST_CASE("through a pipe: a line every N steps, and one at least every quiet_seconds however few the steps") {
  std::ostringstream every_100;
  {
    ProgressLine p(every_100, false, 100, 3600);
    for (int64_t step = 1; step <= 250; ++step) p.update(at(step));
  }
  CHECK(lines(every_100.str()) == 2);
  CHECK(every_100.str().rfind("step 100  loss 2.5000", 0) == 0);

  // A slow run of few steps (each taking longer than quiet_seconds) still prints.
  std::ostringstream slow;
  {
    ProgressLine p(slow, false, 100, 0.5);
    p.update(at(1));  // too soon after the start
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    p.update(at(2));  // printed: 0.6 s without a line
    p.update(at(3));  // too soon after it
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    p.update(at(4));
  }
  CHECK(slow.str() ==
        progress_text(at(2)) + "\n" + progress_text(at(4)) + "\n");
}

TEST_CASE("on a terminal the line is rewritten in place and left on screen at the end") {
  std::ostringstream out;
  {
    ProgressLine p(out, true, 100, 0.0);
    p.update(at(1));
    p.update(at(2));
  }
  CHECK(out.str() == "\r" + progress_text(at(1)) + "\r" + progress_text(at(2)) + "\n");
}

TEST_CASE("items through a pipe: nothing for a short input, a line once quiet_seconds pass, the last count at the end") {
  std::ostringstream quick;
  {
    ItemProgress p(quick, false, "decoded", "sentences", 10, 3600);
    for (int i = 0; i < 10; ++i) p.advance(1);
  }
  CHECK(quick.str().empty());

  std::ostringstream slow;
  {
    ItemProgress p(slow, false, "decoded", "sentences", 10, 0.5);
    p.advance(2);  // too soon after the start
    std::this_thread::sleep_for(std::chrono::milliseconds(600));
    p.advance(2);  // printed: 0.6 s without a line
    p.advance(6);
  }
  CAPTURE(slow.str());
  CHECK(lines(slow.str()) == 2);
  CHECK(slow.str().rfind("decoded 4 of 10 sentences  ", 0) == 0);
  CHECK(slow.str().find(" sentences/s  ETA ") != std::string::npos);
  CHECK(slow.str().find("\ndecoded 10 of 10 sentences  ") != std::string::npos);
}

TEST_CASE("items on a terminal: rewritten in place after live_after_seconds; an unknown total has no ETA") {
  std::ostringstream out;
  {
    ItemProgress p(out, true, "translated", "sentences", 0, 30, 0);
    p.advance(3);
    p.advance(4);
  }
  const std::string s = out.str();
  CAPTURE(s);
  CHECK(s.rfind("\rtranslated 3 sentences", 0) == 0);
  CHECK(s.find("\rtranslated 7 sentences") != std::string::npos);
  CHECK(s.find("ETA") == std::string::npos);
  CHECK(s.back() == '\n');
  CHECK(lines(s) == 1);

  ItemProgress p(out, false, "read", "checkpoints", 4);
  p.advance(1);
  CHECK(p.text(2.0) == "read 1 of 4 checkpoints  0.5 checkpoints/s  ETA 6s");
}
