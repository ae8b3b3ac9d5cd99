#include "models/run/progress.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <ostream>
#include <utility>

namespace kiln::models {
namespace {

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string rate_text(double tokens_per_second) {
  if (tokens_per_second >= 1e6) return format("%.2fM", tokens_per_second / 1e6);
  if (tokens_per_second >= 1e3) return format("%.1fk", tokens_per_second / 1e3);
  return format("%.0f", tokens_per_second);
}

}  // namespace

std::string duration_text(double seconds) {
  const auto s = static_cast<int64_t>(std::llround(std::max(seconds, 0.0)));
  char buf[32];
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%lldm%02llds", static_cast<long long>(s / 60), static_cast<long long>(s % 60));
  else
    std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                  static_cast<long long>(s / 60 % 60));
  return buf;
}

std::string progress_text(const ProgressStats& s) {
  std::string t = "step " + std::to_string(s.step) + "  loss " + format("%.4f", s.loss) + "  " +
                  rate_text(s.tokens_per_second) + " tok/s  lr " + format("%.3e", s.lr);
  if (s.eta_seconds >= 0) t += "  ETA " + duration_text(s.eta_seconds);
  return t;
}

ProgressLine::ProgressLine(std::ostream& out, bool live, int64_t every, double quiet_seconds)
    : out_(out), live_(live), every_(every), quiet_seconds_(quiet_seconds), last_line_(std::chrono::steady_clock::now()) {}

// The last live line stays on screen.
ProgressLine::~ProgressLine() {
  if (live_width_ > 0) out_ << '\n' << std::flush;
}

void ProgressLine::clear_live() {
  if (live_width_ == 0) return;
  out_ << '\r' << std::string(live_width_, ' ') << '\r' << std::flush;
  live_width_ = 0;
}

void ProgressLine::update(const ProgressStats& s) {
  const std::string text = progress_text(s);
  if (live_) {
    // Pad over a longer previous line so no stale characters remain.
    out_ << '\r' << text << std::string(live_width_ > text.size() ? live_width_ - text.size() : 0, ' ') << std::flush;
    live_width_ = text.size();
    return;
  }
  const auto now = std::chrono::steady_clock::now();
  const bool quiet_too_long = std::chrono::duration<double>(now - last_line_).count() >= quiet_seconds_;
  if ((every_ > 0 && s.step % every_ == 0) || quiet_too_long) {
    out_ << text << '\n' << std::flush;
    last_line_ = now;
  }
}

void ProgressLine::message(const std::string& line) {
  clear_live();
  out_ << line << '\n' << std::flush;
}

ItemProgress::ItemProgress(std::ostream& out, bool live, std::string verb, std::string items, int64_t total,
                           double quiet_seconds, double live_after_seconds)
    : out_(out),
      live_(live),
      verb_(std::move(verb)),
      items_(std::move(items)),
      total_(total),
      quiet_seconds_(quiet_seconds),
      live_after_seconds_(live_after_seconds),
      start_(std::chrono::steady_clock::now()) {}

ItemProgress::~ItemProgress() {
  if (!shown_) return;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (live_) {
    show(seconds);
    out_ << '\n' << std::flush;
  } else if (seconds > last_shown_) {
    show(seconds);
  }
}

std::string ItemProgress::text(double seconds) const {
  std::string t = verb_ + " " + std::to_string(done_);
  if (total_ > 0) t += " of " + std::to_string(total_);
  t += " " + items_;
  if (seconds > 0) {
    const double rate = static_cast<double>(done_) / seconds;
    char buf[64];
    std::snprintf(buf, sizeof buf, "  %.1f %s/s", rate, items_.c_str());
    t += buf;
    if (total_ > 0 && rate > 0) t += "  ETA " + duration_text(static_cast<double>(total_ - done_) / rate);
  }
  return t;
}

void ItemProgress::show(double seconds) {
  const std::string line = text(seconds);
  if (live_) {
    out_ << '\r' << line << std::string(live_width_ > line.size() ? live_width_ - line.size() : 0, ' ') << std::flush;
    live_width_ = line.size();
  } else {
    out_ << line << '\n' << std::flush;
  }
  last_shown_ = seconds;
  shown_ = true;
}

void ItemProgress::advance(int64_t items) {
  done_ += items;
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  if (live_ ? seconds >= live_after_seconds_ : seconds - last_shown_ >= quiet_seconds_) show(seconds);
}

}  // namespace kiln::models
