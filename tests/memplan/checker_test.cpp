// Testing the tester: check_memory_plan on hand-made plans, sound and deliberately wrong.
#include <doctest/doctest.h>

#include <initializer_list>
#include <string>
#include <vector>

#include "program_builder.h"

using kiln::compiler::MemoryPlan;

namespace {

// A plan with the given offsets and arena, naive_bytes right (so only the planted fault is reported).
MemoryPlan plan_of(const ProgramBuilder& p, std::vector<int64_t> offsets, int64_t arena) {
  MemoryPlan plan;
  plan.offsets = std::move(offsets);
  plan.arena_bytes = arena;
  for (const auto& b : p.buffers)
    if (!b.external) plan.naive_bytes += (b.bytes + 63) / 64 * 64;
  return plan;
}

// The one problem reported, which must contain every one of `parts`.
void check_one_problem(const std::vector<std::string>& problems, std::initializer_list<std::string> parts) {
  REQUIRE_MESSAGE(problems.size() == 1, "problems: ", problems.size());
  for (const std::string& part : parts)
    CHECK_MESSAGE(problems[0].find(part) != std::string::npos, "\"", problems[0], "\" lacks \"", part, "\"");
}

// x -> a -> b -> c, each step elementwise on the previous value and allowed in place.
ProgramBuilder chain(bool c_live_out = true) {
  ProgramBuilder p;
  const int x = p.external("x", 256);
  const int a = p.buffer("a", 256);
  const int b = p.buffer("b", 256);
  const int c = p.buffer("c", 256, c_live_out);
  p.step("load", {x}, {a});
  p.step("relu", {a}, {b}, {{a, b}});
  p.step("neg", {b}, {c}, {{b, c}});
  return p;
}

}  // namespace

TEST_CASE("checker: a sound in-place chain and a sound plan without sharing pass") {
  const ProgramBuilder p = chain();
  CHECK(p.check(plan_of(p, {-1, 0, 0, 0}, 256)).empty());
  CHECK(p.check(plan_of(p, {-1, 0, 256, 512}, 768)).empty());
  CHECK(p.check(plan_of(p, {-1, 0, 256, 0}, 512)).empty());  // a and c never live together
}

TEST_CASE("checker: two buffers live at once on overlapping bytes") {
  ProgramBuilder p;
  const int a = p.buffer("a", 256);
  const int b = p.buffer("b", 256);
  const int c = p.buffer("c", 256, true);
  p.step("k0", {}, {a});
  p.step("k1", {a}, {b});
  p.step("k2", {a, b}, {c});
  check_one_problem(p.check(plan_of(p, {0, 192, 512}, 768)), {"'a'", "'b'", "overlap", "step 1 (k1)"});
  check_one_problem(p.check(plan_of(p, {0, 256, 0}, 768)), {"'a'", "'c'", "step 2 (k2)"});
}

TEST_CASE("checker: an operand dying at a step still overlaps its results unless the pair is in place") {
  ProgramBuilder p;
  const int a = p.buffer("a", 256);
  const int b = p.buffer("b", 256, true);
  p.step("k0", {}, {a});
  p.step("k1", {a}, {b});
  check_one_problem(p.check(plan_of(p, {0, 0}, 256)), {"'a'", "'b'", "step 1 (k1)"});
}

TEST_CASE("checker: illegal in-place sharing") {
  SUBCASE("the operand is read again later") {
    ProgramBuilder p;
    const int a = p.buffer("a", 256);
    const int b = p.buffer("b", 256);
    const int c = p.buffer("c", 256, true);
    p.step("k0", {}, {a});
    p.step("k1", {a}, {b}, {{a, b}});
    p.step("k2", {a, b}, {c});
    check_one_problem(p.check(plan_of(p, {0, 0, 256}, 512)), {"'a'", "'b'", "step 1 (k1)"});
  }
  SUBCASE("the operand is live_out") {
    ProgramBuilder p;
    const int a = p.buffer("a", 256, true);
    const int b = p.buffer("b", 256, true);
    p.step("k0", {}, {a});
    p.step("k1", {a}, {b}, {{a, b}});
    check_one_problem(p.check(plan_of(p, {0, 0}, 256)), {"'a'", "'b'"});
  }
  SUBCASE("the operand is external") {
    ProgramBuilder p;
    const int x = p.external("x", 256);
    const int b = p.buffer("b", 256, true);
    p.step("k0", {x}, {b}, {{x, b}});
    check_one_problem(p.check(plan_of(p, {0, 0}, 256)), {"external", "'x'"});
  }
  SUBCASE("the result is larger than the operand") {
    ProgramBuilder p;
    const int a = p.buffer("a", 128);
    const int b = p.buffer("b", 256, true);
    p.step("k0", {}, {a});
    p.step("k1", {a}, {b}, {{a, b}});
    check_one_problem(p.check(plan_of(p, {0, 0}, 256)), {"'a'", "'b'"});
  }
  SUBCASE("two results of one step take the same operand") {
    ProgramBuilder p;
    const int a = p.buffer("a", 256);
    const int b = p.buffer("b", 256, true);
    const int c = p.buffer("c", 256, true);
    p.step("k0", {}, {a});
    p.step("k1", {a}, {b, c}, {{a, b}, {a, c}});
    check_one_problem(p.check(plan_of(p, {0, 0, 0}, 256)), {"'b'", "'c'", "step 1 (k1)"});
  }
  SUBCASE("a pair the step does not declare") {
    ProgramBuilder p;
    const int a = p.buffer("a", 256);
    const int b = p.buffer("b", 256);
    const int c = p.buffer("c", 256, true);
    p.step("k0", {}, {a});
    p.step("k1", {a}, {b, c}, {{a, b}});
    check_one_problem(p.check(plan_of(p, {0, 256, 0}, 512)), {"'a'", "'c'"});
  }
}

TEST_CASE("checker: results of one step never read still need their bytes during it") {
  ProgramBuilder p;
  const int a = p.buffer("a", 100);
  const int b = p.buffer("b", 100);
  p.step("k0", {}, {a, b});
  check_one_problem(p.check(plan_of(p, {0, 0}, 128)), {"'a'", "'b'"});
  CHECK(p.check(plan_of(p, {0, 128}, 256)).empty());
}

TEST_CASE("checker: one shared byte is an overlap, touching ranges are not") {
  ProgramBuilder p;
  const int a = p.buffer("a", 65, true);
  const int b = p.buffer("b", 64, true);
  p.step("k0", {}, {a, b});
  check_one_problem(p.check(plan_of(p, {0, 64}, 192)), {"'a' at [0, 65)", "'b' at [64, 128)"});
  p.buffers[a].bytes = 64;
  CHECK(p.check(plan_of(p, {0, 64}, 128)).empty());
}

TEST_CASE("checker: zero-byte buffers overlap nothing") {
  ProgramBuilder p;
  const int a = p.buffer("a", 256, true);
  const int e = p.buffer("e", 0, true);
  p.step("k0", {}, {a, e});
  CHECK(p.check(plan_of(p, {0, 0}, 256)).empty());
  CHECK(p.check(plan_of(p, {0, 128}, 256)).empty());
}

TEST_CASE("checker: misaligned, past the arena, external placed, unplaced") {
  const ProgramBuilder p = chain();
  check_one_problem(p.check(plan_of(p, {-1, 0, 288, 0}, 768)), {"'b'", "not aligned to 64"});
  check_one_problem(p.check(plan_of(p, {-1, 0, 256, 512}, 700)), {"'c'", "past the arena", "700"});
  check_one_problem(p.check(plan_of(p, {0, 256, 512, 768}, 1024)), {"external", "'x'"});
  check_one_problem(p.check(plan_of(p, {-1, 0, -1, 512}, 768)), {"'b'", "no offset"});
}

TEST_CASE("checker: plan bookkeeping") {
  const ProgramBuilder p = chain();
  MemoryPlan plan = plan_of(p, {-1, 0, 0, 0}, 256);
  plan.naive_bytes = 512;
  check_one_problem(p.check(plan), {"naive_bytes is 512", "768"});
  check_one_problem(p.check(plan_of(p, {0, 0}, 256)), {"2 offsets for 4 buffers"});
}

TEST_CASE("checker: an ill-formed program is a problem, not a crash") {
  ProgramBuilder p;
  const int a = p.buffer("a", 64, true);
  p.step("k0", {a, 7}, {a});
  const std::vector<std::string> problems = p.check(plan_of(p, {0}, 64));
  REQUIRE(problems.size() == 2);
  CHECK(problems[0] == "step 0 (k0) reads 'a' before it is written");
  CHECK(problems[1] == "step 0 (k0) reads buffer id 7, out of range");
}
