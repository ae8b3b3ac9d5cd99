#pragma once
// How many threads kiln_parallel_for's pool may run, and the checked way to
// set them: a count beyond the limit, or threads the system will not start, is
// a kiln::Error naming the count, the limit and why, never a std::system_error
// ("Resource temporarily unavailable") escaping from the pool.
#include <cstdint>
#include <string>
#include <string_view>

namespace kiln::compiler {

struct ThreadLimit {
  int threads = 0;
  std::string what;  // why, e.g. "the limit on this user's processes and threads, ulimit -u 64"
};

// The smaller of a fixed maximum (256, or the cores if more: more threads than
// cores only spin) and the process limit (RLIMIT_NPROC).
ThreadLimit thread_limit();

// Sets the pool's threads (the caller included); n == 0 means all cores.
// Throws kiln::Error "WHAT: N is ..." if n is negative or over thread_limit(),
// or if the system starts fewer threads (the pool then keeps those it started).
void set_threads(int64_t n, std::string_view what);

}  // namespace kiln::compiler
