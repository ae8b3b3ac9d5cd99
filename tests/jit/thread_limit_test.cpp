// The thread pool takes no count beyond its limit, from any caller (the CLI's
// --threads, Python's compile(threads=...)), and a count it cannot start is an
// error that leaves it working on the threads that did start.
#include "compiler/runtime/thread_limit.h"

#include <doctest/doctest.h>

#include <thread>

#include "check_error.h"
#include "compiler/backend.h"
#include "compiler/runtime/kiln_runtime.h"
#include "engine/ir/graph.h"

using namespace kiln;

TEST_CASE("a thread count beyond the pool's limit, or negative, is an error naming it and leaves the pool as it was") {
  const compiler::ThreadLimit limit = compiler::thread_limit();
  CHECK(limit.threads <= std::max(256, static_cast<int>(std::thread::hardware_concurrency())));
  compiler::set_threads(2, "threads");
  check_error([] { compiler::set_threads(1'000'000, "threads"); },
              {"threads: 1000000 is more than the limit of ", limit.what});
  check_error([] { compiler::set_threads(-3, "threads"); }, {"threads: -3 is negative (0: all cores)"});
  check_error([] { kiln_set_num_threads(1'000'000); }, {"threads: 1000000 is more than the limit of "});
  CHECK(kiln_num_threads() == 2);

  compiler::BackendOptions opts;
  opts.backend = "interp";
  opts.threads = 1'000'000;
  Graph g("g");
  g.add_output(g.declare(ValueKind::input, "x", {DType::f32, {2}}));
  check_error([&] { compiler::make_executable(g, opts); }, {"threads: 1000000 is more than the limit of "});
  compiler::set_threads(0, "threads");
  CHECK(kiln_num_threads() == std::max(1, static_cast<int>(std::thread::hardware_concurrency())));
}
