#pragma once
// Checks of numeric flag values whose errors say what the flag wants
// ("--dropout: wants a number from 0 to 0.99, got 1.5"). They replace CLI11's
// Range and PositiveNumber, which let nan through, print their bounds as
// "0.000000 to 1797693...", and leave an integer beyond the option's type to be
// clamped. Each takes the option's variable to know its type:
//   cmd->add_option("--steps", opts.steps)->check(positive(opts.steps));
#include <CLI/CLI.hpp>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

#include "engine/ir/error.h"

namespace kiln::cli {

// An integer in [lo, hi].
CLI::Validator integer_in(int64_t lo, int64_t hi);
// A finite number in [lo, hi], or in (lo, hi] with lo_open.
CLI::Validator number_in(double lo, double hi, bool lo_open = false);

// lo..hi for the variable's type (hi: the type's largest value if not given).
template <class T>
CLI::Validator in_range(const T&, double lo, double hi = std::numeric_limits<T>::max()) {
  if constexpr (std::is_integral_v<T>)
    return integer_in(static_cast<int64_t>(lo), hi >= static_cast<double>(std::numeric_limits<T>::max())
                                                    ? static_cast<int64_t>(std::numeric_limits<T>::max())
                                                    : static_cast<int64_t>(hi));
  else
    return number_in(lo, hi);
}
// > 0 (integers: >= 1).
template <class T>
CLI::Validator positive(const T& v) {
  if constexpr (std::is_integral_v<T>) return in_range(v, 1);
  else return number_in(0, std::numeric_limits<double>::max(), true);
}
// >= 0.
template <class T>
CLI::Validator non_negative(const T& v) {
  return in_range(v, 0);
}

// --threads: an integer from `lo` (0 where it means all cores) to the thread
// pool's limit (compiler/runtime/thread_limit.h), whose reason a count over it
// is told.
CLI::Validator thread_count(int64_t lo);

// A check of a flag's text by a parser that throws kiln::Error, whose message
// becomes the flag's error; `form` is what --help shows ("NAME=PATH.npy").
template <class Parse>
CLI::Validator parses_as(Parse parse, const char* form) {
  return CLI::Validator(
      [parse](const std::string& arg) {
        try {
          parse(arg);
          return std::string();
        } catch (const Error& e) {
          return std::string(e.what());
        }
      },
      form);
}

}  // namespace kiln::cli
