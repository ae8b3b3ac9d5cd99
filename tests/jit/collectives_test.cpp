// The program's collectives on one rank (the test process): where they start
// and wait, their memory, the profile's track, what AOT says, and a training
// step that sums its gradients over one rank as the step without. tests/mpi
// runs them on two ranks.
#include <doctest/doctest.h>

#include <xtensor/xmath.hpp>

#include "compiler/backend.h"
#include "compiler/emit_file.h"
#include "compiler/target/target.h"
#include "compiler/jit_executable.h"
#include "compiler/pipeline.h"
#include "compiler/profile.h"
#include "compiler/schedule/program.h"
#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "ops/collective.h"
#include "ops/elementwise.h"

using namespace kiln;
using namespace kiln::compiler;

namespace {

// x -> exp -> allreduce, then a kernel that does not need the sum, then one that does.
Graph overlapped() {
  Graph g("overlap");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {1000}});
  const Value sum = ops::allreduce(b, ops::exp(b, x));
  const Value other = ops::mul(b, x, x);
  b.output(ops::add(b, sum, other));
  return g;
}

PipelineOptions no_passes() {
  PipelineOptions o;
  o.passes.passes = {std::string(kNoPasses)};
  return o;
}

Tensor ramp(size_t n) {
  Tensor::F32 a = Tensor::F32::from_shape({n});
  for (size_t i = 0; i < n; ++i) a(i) = static_cast<float>(i) * 1e-3f;
  return Tensor(std::move(a));
}

}  // namespace

TEST_CASE("an allreduce starts after its operand's kernel and is waited for just before its first reader") {
  const Program p = compile_graph(overlapped(), no_passes()).program;
  REQUIRE(p.calls.size() == 3);  // exp, mul, add
  REQUIRE(p.collectives.size() == 1);
  REQUIRE(p.events.size() == 2);
  CHECK(p.events[0].kind == CollectiveEvent::Kind::start);
  CHECK(p.events[0].before_call == 1);  // after exp, before mul: mul runs while the ranks sum
  CHECK(p.events[1].kind == CollectiveEvent::Kind::wait);
  CHECK(p.events[1].before_call == 2);  // before add, the sum's reader
  const std::string text = print_program(p);
  CHECK(text.find("1 collectives") != std::string::npos);
  const size_t start = text.find("start allreduce#0"), wait = text.find("wait allreduce#0");
  REQUIRE(start != std::string::npos);
  REQUIRE(wait != std::string::npos);
  CHECK(start < text.find("1: k"));
  CHECK(text.find("1: k") < wait);
  CHECK(wait < text.find("2: k"));
  // The sum goes over its dying operand: no copy, no second buffer.
  const CollectiveCall& c = p.collectives[0];
  CHECK(p.plan.offsets[static_cast<size_t>(c.args[1])] == p.plan.offsets[static_cast<size_t>(c.args[0])]);
  CHECK(check_memory_plan(plan_buffers(p), plan_steps(p), p.plan).empty());
}

TEST_CASE("allreduce on one rank: the JIT matches the interpreter, fused or not, and profiles on its own track") {
  for (const bool fused : {false, true}) {
    CAPTURE(fused);
    JitOptions o;
    if (!fused) o.pipeline = no_passes();
    JitExecutable jit(overlapped(), o);
    jit.bind("x", ramp(1000));
    jit.profile(true);
    jit.run();
    Interpreter interp(overlapped());
    interp.bind("x", ramp(1000));
    interp.run();
    const std::string out = jit.output_names()[0];
    // exp: the JIT's and the reference's differ in the last bits (tests/jit/fast_math_test.cpp).
    CHECK(xt::amax(xt::abs(jit.output(out).f32() - interp.output(out).f32()))() <= 1e-5f);
    const RunProfile& r = jit.run_profile();
    REQUIRE(r.collectives.size() == 1);
    CHECK(r.collectives[0].wait_end_ns >= r.collectives[0].start_ns);
    const std::string trace = chrome_trace(jit.compiled().program, r);
    CHECK(trace.find("collectives (in flight)") != std::string::npos);
    CHECK(trace.find("\"wait allreduce#0\"") != std::string::npos);
    CHECK(collective_times(jit.compiled().program, r).bytes == 4000);
  }
}

TEST_CASE("an allreduce of a param is copied into its result: the param stays as it was") {
  Graph g("param_sum");
  Builder b(g);
  const Value w = b.param("w", {DType::f32, {8}});
  const Value s = ops::allreduce(b, w);
  b.output(ops::add(b, s, w));
  JitExecutable jit(std::move(g));
  jit.bind("w", ramp(8));
  jit.run();
  CHECK(jit.output(jit.output_names()[0]).f32() == ramp(8).f32() * 2.0f);
  CHECK(jit.binding("w").f32() == ramp(8).f32());
}

TEST_CASE("an object file cannot hold a collective, and says so") {
  CHECK_THROWS_WITH(emit_graph(overlapped(), detect_target(""), EmitKind::object),
                    doctest::Contains("collectives run in the JIT's program only"));
}
