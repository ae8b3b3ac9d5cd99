#include "tools/flag_checks.h"

#include <charconv>
#include <cmath>
#include <string>

#include "compiler/runtime/thread_limit.h"

namespace kiln::cli {
namespace {

std::string number_str(double x) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, x);
  return std::string(buf, r.ptr);
}

// "from 1 to 64", "> 0", ">= 1"
std::string bounds(const std::string& lo, const std::string& hi, bool lo_open, bool no_hi) {
  if (no_hi) return (lo_open ? "> " : ">= ") + lo;
  return (lo_open ? "above " + lo + " and up to " : "from " + lo + " to ") + hi;
}

}  // namespace

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  // A type's largest value is not a bound to tell the user (it is checked all the same).
  const bool no_hi = hi == std::numeric_limits<int64_t>::max() || hi == std::numeric_limits<int32_t>::max() ||
                     hi == std::numeric_limits<uint32_t>::max();
  const std::string wants = "wants an integer " + bounds(std::to_string(lo), std::to_string(hi), false, no_hi);
  return CLI::Validator(
      [lo, hi, no_hi, wants](std::string& s) -> std::string {
        int64_t v = 0;
        const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        if (r.ec == std::errc::result_out_of_range) return wants + ", got " + s + " (too large)";
        if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return wants + ", got '" + s + "'";
        if (v < lo || v > hi) return wants + ", got " + s + (v > hi && no_hi ? " (too large)" : "");
        return "";
      },
      no_hi ? ">=" + std::to_string(lo) : std::to_string(lo) + ".." + std::to_string(hi));
}

CLI::Validator number_in(double lo, double hi, bool lo_open) {
  const bool no_hi = hi == std::numeric_limits<double>::max();
  const std::string wants = "wants a number " + bounds(number_str(lo), number_str(hi), lo_open, no_hi);
  return CLI::Validator(
      [lo, hi, lo_open, wants](std::string& s) -> std::string {
        double v = 0;
        const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return wants + ", got '" + s + "'";
        if (!std::isfinite(v)) return wants + ", got " + s;
        if (v < lo || (lo_open && v == lo) || v > hi) return wants + ", got " + s;
        return "";
      },
      no_hi ? std::string(lo_open ? ">" : ">=") + number_str(lo) : number_str(lo) + ".." + number_str(hi));
}

CLI::Validator thread_count(int64_t lo) {
  const compiler::ThreadLimit limit = compiler::thread_limit();
  const CLI::Validator range = integer_in(lo, limit.threads);
  return CLI::Validator(
      [range, limit](std::string& s) -> std::string {
        const std::string problem = range(s);
        int64_t v = 0;
        const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
        const bool over = r.ec == std::errc::result_out_of_range || (r.ec == std::errc() && v > limit.threads);
        return over && !problem.empty() ? problem + " (" + limit.what + ")" : problem;
      },
      range.get_description());
}

}  // namespace kiln::cli
