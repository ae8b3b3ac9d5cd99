// plan_memory on hand-made programs: in-place chains, diamonds, live_out, best fit, errors.
#include <doctest/doctest.h>

#include "check_error.h"
#include "program_builder.h"

using kiln::compiler::MemoryPlan;

namespace {

// x -> t0 -> t1 -> ... -> t{n-1} (live_out), each step elementwise; in place if `in_place`.
ProgramBuilder chain(int n, int64_t bytes, bool in_place) {
  ProgramBuilder p;
  int prev = p.external("x", bytes);
  for (int i = 0; i < n; ++i) {
    const int t = p.buffer(std::string("t") + std::to_string(i), bytes, i == n - 1);
    p.step(std::string("k") + std::to_string(i), {prev}, {t});
    if (in_place && i > 0) p.steps.back().in_place = {{prev, t}};
    prev = t;
  }
  return p;
}

}  // namespace

TEST_CASE("planner: an in-place chain uses one buffer, without in-place two") {
  const ProgramBuilder with = chain(4, 1000, true);
  const MemoryPlan a = with.plan();
  CHECK(with.check(a).empty());
  CHECK(a.arena_bytes == 1024);
  CHECK(a.naive_bytes == 4 * 1024);
  CHECK(a.in_place_reuses == 3);
  CHECK(a.offsets == std::vector<int64_t>{-1, 0, 0, 0, 0});

  const ProgramBuilder without = chain(4, 1000, false);
  const MemoryPlan b = without.plan();
  CHECK(without.check(b).empty());
  CHECK(b.arena_bytes == 2 * 1024);
  CHECK(b.in_place_reuses == 0);
}

TEST_CASE("planner: --no-reuse gives every buffer its own range") {
  const ProgramBuilder p = chain(4, 1000, true);
  const MemoryPlan plan = p.plan(false);
  CHECK(p.check(plan).empty());
  CHECK(plan.arena_bytes == plan.naive_bytes);
  CHECK(plan.in_place_reuses == 0);
  CHECK(plan.offsets == std::vector<int64_t>{-1, 0, 1024, 2048, 3072});
}

TEST_CASE("planner: a diamond shares only where the operand dies") {
  ProgramBuilder p;
  const int a = p.buffer("a", 256);
  const int b = p.buffer("b", 256);
  const int c = p.buffer("c", 256);
  const int d = p.buffer("d", 256, true);
  p.step("k0", {}, {a});
  p.step("k1", {a}, {b}, {{a, b}});  // a is still read by k2: not in place
  p.step("k2", {a}, {c}, {{a, c}});
  p.step("k3", {b, c}, {d}, {{b, d}, {c, d}});
  const MemoryPlan plan = p.plan();
  CHECK(p.check(plan).empty());
  CHECK(plan.offsets[b] != plan.offsets[a]);
  CHECK(plan.offsets[c] == plan.offsets[a]);
  CHECK(plan.offsets[d] == plan.offsets[b]);  // equal sizes: the first pair listed
  CHECK(plan.in_place_reuses == 2);
  CHECK(plan.arena_bytes == 512);
}

TEST_CASE("planner: live_out buffers are never reused") {
  ProgramBuilder p;
  const int a = p.buffer("a", 256, true);
  const int b = p.buffer("b", 256);
  const int c = p.buffer("c", 256);
  const int d = p.buffer("d", 256, true);
  p.step("k0", {}, {a});
  p.step("k1", {a}, {b}, {{a, b}});
  p.step("k2", {b}, {c}, {{b, c}});
  p.step("k3", {c}, {d});
  const MemoryPlan plan = p.plan();
  CHECK(p.check(plan).empty());
  CHECK(plan.offsets[b] != plan.offsets[a]);
  CHECK(plan.offsets[c] == plan.offsets[b]);
  CHECK(plan.offsets[d] != plan.offsets[a]);
  CHECK(plan.arena_bytes == 768);
}

TEST_CASE("planner: a smaller result takes the operand's head; the tail is freed after the step") {
  ProgramBuilder p;
  const int a = p.buffer("a", 256);
  const int b = p.buffer("b", 64);
  const int c = p.buffer("c", 128, true);
  const int big = p.buffer("big", 512);
  p.step("k0", {}, {a});
  p.step("k1", {a}, {b, big}, {{a, b}, {a, big}});  // big does not fit in a
  p.step("k2", {b, big}, {c});
  const MemoryPlan plan = p.plan();
  CHECK(p.check(plan).empty());
  CHECK(plan.offsets[b] == plan.offsets[a]);
  CHECK(plan.offsets[big] == 256);  // a's tail is still read during k1
  CHECK(plan.offsets[c] == 64);     // k2: the tail [64, 256) is free
  CHECK(plan.arena_bytes == 768);
  CHECK(plan.in_place_reuses == 1);
}

TEST_CASE("planner: best fit takes the smallest hole, neighbours coalesce, the last free range grows") {
  ProgramBuilder p;
  const int a = p.buffer("a", 128);
  const int s1 = p.buffer("s1", 64, true);
  const int b = p.buffer("b", 64);
  const int s2 = p.buffer("s2", 64, true);
  const int t = p.buffer("t", 64, true);
  const int u = p.buffer("u", 64, true);
  const int v = p.buffer("v", 192, true);
  p.step("k0", {}, {a, s1, b, s2});  // a@0 s1@128 b@192 s2@256
  p.step("k1", {a, b}, {t});         // t@320; then holes [0, 128) and [192, 256)
  p.step("k2", {}, {u});             // the smaller hole
  p.step("k3", {}, {v});             // fits no hole, and no free range ends the arena: fresh at 384
  const MemoryPlan plan = p.plan();
  CHECK(p.check(plan).empty());
  CHECK(plan.offsets[a] == 0);
  CHECK(plan.offsets[t] == 320);
  CHECK(plan.offsets[u] == 192);
  CHECK(plan.offsets[v] == 384);
  CHECK(plan.arena_bytes == 576);

  ProgramBuilder q;
  const int x = q.buffer("x", 64);
  const int y = q.buffer("y", 64);
  const int z = q.buffer("z", 64, true);
  const int w = q.buffer("w", 256, true);
  q.step("k0", {}, {x, y, z});  // x@0 y@64 z@128
  q.step("k1", {x, y}, {});     // [0, 128) once coalesced
  const int tail = q.buffer("tail", 128);
  q.step("k2", {}, {tail});  // fits only in the merged hole
  q.step("k3", {tail}, {});  // [0, 128) free again
  q.step("k4", {}, {w});     // fits no hole, and z ends the arena: fresh at 192
  const MemoryPlan qp = q.plan();
  CHECK(q.check(qp).empty());
  CHECK(qp.offsets[tail] == 0);
  CHECK(qp.offsets[w] == 192);
}

TEST_CASE("planner: a free range at the end of the arena grows instead of starting fresh") {
  ProgramBuilder p;
  const int a = p.buffer("a", 64, true);
  const int b = p.buffer("b", 64);
  const int c = p.buffer("c", 128, true);
  p.step("k0", {}, {a, b});
  p.step("k1", {b}, {});
  p.step("k2", {}, {c});
  const MemoryPlan plan = p.plan();
  CHECK(p.check(plan).empty());
  CHECK(plan.offsets[c] == 64);
  CHECK(plan.arena_bytes == 192);
}

TEST_CASE("planner: externals are not placed, zero-byte buffers sit at 0, results of one step never overlap") {
  ProgramBuilder p;
  const int x = p.external("x", 4096);
  const int e = p.buffer("e", 0);
  const int a = p.buffer("a", 100);
  const int b = p.buffer("b", 100);
  p.step("k0", {x}, {e, a, b}, {{x, a}});
  p.step("k1", {e}, {x});  // an assign: writes the external state
  const MemoryPlan plan = p.plan();
  CHECK(p.check(plan).empty());
  CHECK(plan.offsets[x] == -1);
  CHECK(plan.offsets[e] == 0);
  CHECK(plan.offsets[a] != plan.offsets[b]);
  CHECK(plan.naive_bytes == 256);
  CHECK(plan.arena_bytes == 256);
  CHECK(plan.in_place_reuses == 0);
}

TEST_CASE("planner: an empty program") {
  const MemoryPlan plan = kiln::compiler::plan_memory({}, {});
  CHECK(plan.offsets.empty());
  CHECK(plan.arena_bytes == 0);
  CHECK(plan.naive_bytes == 0);
}

TEST_CASE("planner: ill-formed programs name the step and the buffer") {
  SUBCASE("read before written") {
    ProgramBuilder p;
    const int a = p.buffer("a", 64);
    const int b = p.buffer("b", 64);
    p.step("k0", {a}, {b});
    p.step("k1", {}, {a});
    check_error([&] { p.plan(); }, {"step 0 (k0)", "'a'", "before it is written"});
  }
  SUBCASE("a kernel reading its own result") {
    ProgramBuilder p;
    const int a = p.buffer("a", 64);
    p.step("k0", {a}, {a});
    check_error([&] { p.plan(); }, {"step 0 (k0)", "'a'", "before it is written"});
  }
  SUBCASE("written twice") {
    ProgramBuilder p;
    const int a = p.buffer("a", 64);
    p.step("k0", {}, {a});
    p.step("k1", {a}, {a});
    check_error([&] { p.plan(); }, {"step 1 (k1)", "'a'", "already written by step 0 (k0)"});
  }
  SUBCASE("never written") {
    ProgramBuilder p;
    p.buffer("lost", 64, true);
    check_error([&] { p.plan(); }, {"'lost'", "never written"});
  }
  SUBCASE("ids out of range") {
    ProgramBuilder p;
    const int a = p.buffer("a", 64);
    p.step("k0", {}, {a});
    p.step("k1", {a, 5}, {});
    check_error([&] { p.plan(); }, {"step 1 (k1)", "reads buffer id 5", "out of range (1 buffers)"});
    p.steps[1] = {"k1", {a}, {-1}, {}, {}};
    check_error([&] { p.plan(); }, {"step 1 (k1)", "writes buffer id -1"});
    p.steps[1] = {"k1", {a}, {}, {{a, 3}}, {}};
    check_error([&] { p.plan(); }, {"step 1 (k1)", "in-place", "buffer id 3"});
  }
  SUBCASE("an in-place pair the step does not read and write") {
    ProgramBuilder p;
    const int a = p.buffer("a", 64);
    const int b = p.buffer("b", 64, true);
    p.step("k0", {}, {a});
    p.step("k1", {}, {b}, {{a, b}});
    check_error([&] { p.plan(); }, {"step 1 (k1)", "in-place pair ('a', 'b')"});
  }
  SUBCASE("a negative size") {
    ProgramBuilder p;
    p.buffer("neg", -4);
    check_error([&] { p.plan(); }, {"'neg'", "negative size"});
  }
}
