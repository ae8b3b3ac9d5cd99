// memory_plan_report: the table and the summary line.
#include <doctest/doctest.h>

#include <string>

#include "program_builder.h"

TEST_CASE("report: every buffer, live ranges, in-place notes, and the summary line") {
  ProgramBuilder p;
  const int x = p.external("input", 1 << 20);
  const int a = p.buffer("hidden", 1 << 20);
  const int b = p.buffer("activated", 1 << 20);
  const int c = p.buffer("scaled", 1 << 20);
  const int d = p.buffer("output.with.a.very.long.name", 1 << 20, true);
  p.step("matmul", {x}, {a});
  p.step("relu", {a}, {b}, {{a, b}});
  p.step("scale", {b}, {c}, {{b, c}});
  p.step("neg", {c}, {d}, {{c, d}});
  const std::string report = memory_plan_report(p.buffers, p.steps, p.plan());
  for (const auto& buf : p.buffers) CHECK(report.find(buf.name) != std::string::npos);
  CHECK(report.find("memory: naive 4.0 MiB -> planned 1.0 MiB (75% less), 3 in-place reuses\n") != std::string::npos);
  CHECK(report.find("in-place on 'hidden' at step 1 (relu)") != std::string::npos);
  CHECK(report.find("external") != std::string::npos);
  CHECK(report.find("[3, end]") != std::string::npos);
  CHECK(report.find("live-out") != std::string::npos);
}

TEST_CASE("report: no reuse, small sizes, one reuse") {
  ProgramBuilder p;
  const int a = p.buffer("a", 100);
  const int b = p.buffer("b", 100, true);
  p.step("k0", {}, {a});
  p.step("k1", {a}, {b}, {{a, b}});
  CHECK(memory_plan_report(p.buffers, p.steps, p.plan(false))
            .find("memory: naive 256 B -> planned 256 B (0% less), 0 in-place reuses") != std::string::npos);
  CHECK(memory_plan_report(p.buffers, p.steps, p.plan())
            .find("memory: naive 256 B -> planned 128 B (50% less), 1 in-place reuse\n") != std::string::npos);
}
