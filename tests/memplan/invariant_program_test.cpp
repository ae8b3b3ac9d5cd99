// Run-invariant calls of the lowered program: the calls that read only params
// the graph never assigns and constants are marked and printed [once]; the
// results that calls of every run read are invariant buffers outside the
// arena, the others arena temps; a call making an output or reading an
// assigned param is no such call.
#include <doctest/doctest.h>

#include <string>

#include "compiler/schedule/program.h"
#include "engine/ir/parser.h"

using namespace kiln;
using namespace kiln::compiler;

namespace {

// Each node a call of its own (the graph as written, no passes).
const char* const kGraph = R"(graph @g {
  input %x : f32[4,8]
  param %w : f32[8,6]
  param %u : f32[6]
  %w2 = mul(%w, %w) : f32[8,6]
  %wt = transpose(%w2) {perm=[1,0]} : f32[6,8]
  %y = matmul(%x, %wt) {transpose_b=true} : f32[4,6]
  %mask = causal_mask() {size=4} : f32[4,4]
  %z = matmul(%mask, %y) : f32[4,6]
  %u2 = add(%u, %u) : f32[6]
  %out = add(%z, %u2) : f32[4,6]
  assign(%u, %u2)
  output %out
}
)";

const ProgramBuffer& buffer(const Program& p, const std::string& name) {
  for (const ProgramBuffer& b : p.buffers)
    if (b.name == name) return b;
  FAIL("no buffer %" << name);
  return p.buffers.front();
}

// The call that writes buffer `name`.
const KernelCall& call_making(const Program& p, const std::string& name) {
  for (const KernelCall& c : p.calls)
    for (size_t a = c.num_inputs; a < c.args.size(); ++a)
      if (p.buffers[static_cast<size_t>(c.args[a])].name == name) return c;
  FAIL("no call makes %" << name);
  return p.calls.front();
}

// The printed call line that writes `name`.
std::string line_making(const std::string& text, const std::string& name) {
  const size_t at = text.find("-> %" + name + " ");
  REQUIRE(at != std::string::npos);
  const size_t begin = text.rfind('\n', at) + 1;
  return text.substr(begin, text.find('\n', at) - begin);
}

}  // namespace

TEST_CASE("program: calls of unassigned params and constants are invariant, what every run reads not in the arena") {
  const Program p = build_program(parse_kir(kGraph, "g.kir"));
  for (const char* name : {"w2", "wt", "mask"}) CHECK(call_making(p, name).invariant);
  for (const char* name : {"y", "z", "u2", "out"}) CHECK(!call_making(p, name).invariant);
  // %wt and %mask are read by calls of every run: kept between runs, not in the arena.
  for (const char* name : {"wt", "mask"}) {
    CAPTURE(name);
    const ProgramBuffer& b = buffer(p, name);
    CHECK(b.kind == BufferKind::invariant);
    CHECK(p.plan.offsets[static_cast<size_t>(&b - p.buffers.data())] == -1);
  }
  // %w2 only feeds %wt's call, which runs when it does: an arena temp.
  CHECK(buffer(p, "w2").kind == BufferKind::temp);
  CHECK(buffer(p, "y").kind == BufferKind::temp);
  CHECK(check_memory_plan(plan_buffers(p), plan_steps(p), p.plan).empty());
  const std::vector<PlanBuffer> planned = plan_buffers(p);
  CHECK(planned[static_cast<size_t>(&buffer(p, "wt") - p.buffers.data())].external);

  const std::string text = print_program(p);
  CAPTURE(text);
  CHECK(text.find("program @g: 7 calls of 7 distinct kernels, 3 of them [once] (run-invariant: on the first run "
                  "and after a param is bound), arena ") == 0);
  // Each call ends with where its node comes from: here the .kir line (a model's graph: its scopes).
  CHECK(line_making(text, "wt") == "  1: k1 transpose(%w2) -> %wt : f32[6,8] @ invariant [once]  # g.kir:6:9");
  CHECK(line_making(text, "mask") == "  3: k3 causal_mask() -> %mask : f32[4,4] @ invariant [once]  # g.kir:8:11");
  CHECK(line_making(text, "w2").find("@ arena+") != std::string::npos);
  CHECK(line_making(text, "w2").find("[once]") != std::string::npos);
  CHECK(line_making(text, "y").find("[once]") == std::string::npos);
}

TEST_CASE("program: an invariant value that is an output or an assign's value; invariants off") {
  const Graph g = parse_kir(R"(graph @g {
  param %w : f32[3,2]
  state %s : f32[2,3]
  %wt = transpose(%w) {perm=[1,0]} : f32[2,3]
  %e = exp(%w) : f32[3,2]
  %et = transpose(%e) {perm=[1,0]} : f32[2,3]
  assign(%s, %et)
  output %wt
}
)",
                            "g.kir");
  const Program p = build_program(g);
  // An output is the caller's tensor, written at every run: its call runs every run.
  CHECK(!call_making(p, "wt").invariant);
  CHECK(buffer(p, "wt").kind == BufferKind::output);
  // An assign's value is committed at every run, from memory kept between runs.
  CHECK(call_making(p, "et").invariant);
  CHECK(buffer(p, "et").kind == BufferKind::invariant);
  CHECK(buffer(p, "et").alias == -1);
  CHECK(buffer(p, "e").kind == BufferKind::temp);
  CHECK(check_memory_plan(plan_buffers(p), plan_steps(p), p.plan).empty());
  // Without invariants (AOT's entry runs every call): no call marked, results in the arena.
  const Program every_run = build_program(g, true, false, false);
  for (const KernelCall& c : every_run.calls) CHECK(!c.invariant);
  CHECK(buffer(every_run, "et").kind == BufferKind::temp);
  CHECK(print_program(every_run).find("[once]") == std::string::npos);
}
