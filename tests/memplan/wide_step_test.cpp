// A step of a horizontal kernel (an optimizer's update of every param) reads,
// writes and pairs in place thousands of buffers: planning it costs its size,
// not its size squared (issue 21).
#include <doctest/doctest.h>

#include <chrono>

#include "program_builder.h"

using namespace kiln::compiler;

TEST_CASE("a step of 100,000 in-place pairs plans in well under a second, each result on its operand") {
  for (const int n : {2000, 100000}) {
    CAPTURE(n);
    ProgramBuilder p;
    std::vector<int> operands, results;
    std::vector<std::pair<int, int>> pairs;
    for (int i = 0; i < n; ++i) operands.push_back(p.buffer("a" + std::to_string(i), 64));
    p.step("make", {}, operands);
    for (int i = 0; i < n; ++i) {
      results.push_back(p.buffer("b" + std::to_string(i), 64, /*live_out=*/true));
      pairs.emplace_back(operands[static_cast<size_t>(i)], results.back());
    }
    p.step("update", operands, results, pairs);
    const auto start = std::chrono::steady_clock::now();
    const MemoryPlan plan = p.plan();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    CHECK(ms < 1000);
    CHECK(plan.in_place_reuses == n);
    int on_operand = 0;
    for (int i = 0; i < n; ++i)
      on_operand += plan.offsets[static_cast<size_t>(results[static_cast<size_t>(i)])] ==
                    plan.offsets[static_cast<size_t>(operands[static_cast<size_t>(i)])];
    CHECK(on_operand == n);
    if (n <= 2000) CHECK(p.check(plan).empty());  // the checker compares every pair of live buffers
  }
}
