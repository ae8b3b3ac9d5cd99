// `kiln compile`'s backend: LLVM IR, assembly and objects of a lowered graph, with
// explicit vector types sized from the target's features.
#include <doctest/doctest.h>

#include "compiler/emit_file.h"
#include "compiler/target/target.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "ops/elementwise.h"
#include "text_and_files.h"

using namespace kiln;
using namespace kiln::compiler;

namespace {

Graph add_graph() {
  Graph g("vadd");
  Builder b(g);
  b.output(ops::add(b, b.input("x", {DType::f32, {4, 1000}}), b.input("y", {DType::f32, {4, 1000}})));
  return g;
}

bool is_x86_host() { return detect_target().triple.rfind("x86_64", 0) == 0; }

}  // namespace

TEST_CASE("the vector width follows the target's features") {
  const Target host = detect_target();
  CHECK((host.vector_width == 4 || host.vector_width == 8 || host.vector_width == 16));
  if (!is_x86_host()) return;
  CHECK(detect_target("x86-64").vector_width == 4);  // SSE2 only
  CHECK(detect_target("haswell").vector_width == 8);  // AVX2
  CHECK(detect_target("skylake-avx512").vector_width == 16);
  CHECK_THROWS_WITH_AS(detect_target("pentium-9000"), "unknown target CPU 'pentium-9000' (see llc -mcpu=help)",
                       Error);
}

TEST_CASE("emitted LLVM IR has the entry point and explicit vectors") {
  const Target t = detect_target();
  const std::string ir = emit_graph(add_graph(), t, EmitKind::llvm, "vadd_main");
  CHECK(contains(ir, "void @vadd_main(ptr"));
  std::string vec = "<";
  vec += std::to_string(t.vector_width);
  vec += " x float>";
  CHECK(contains(ir, vec));
}

TEST_CASE("emitted assembly uses the target's vector registers") {
  if (!is_x86_host()) return;
  const std::string avx512 = emit_graph(add_graph(), detect_target("skylake-avx512"), EmitKind::assembly);
  CHECK(contains(avx512, "vaddps"));
  CHECK(contains(avx512, "zmm"));
  const std::string avx2 = emit_graph(add_graph(), detect_target("haswell"), EmitKind::assembly);
  CHECK(contains(avx2, "vaddps"));
  CHECK(contains(avx2, "ymm"));
  CHECK_FALSE(contains(avx2, "zmm"));
  const std::string sse = emit_graph(add_graph(), detect_target("x86-64"), EmitKind::assembly);
  CHECK(contains(sse, "addps"));
  CHECK_FALSE(contains(sse, "ymm"));
}

TEST_CASE("emitted objects are ELF and the emit kinds parse") {
  const std::string obj = emit_graph(add_graph(), detect_target(), EmitKind::object);
  REQUIRE(obj.size() > 4);
  CHECK(obj.substr(0, 4) == "\x7f" "ELF");
  CHECK(parse_emit_kind("llvm") == EmitKind::llvm);
  CHECK(parse_emit_kind("asm") == EmitKind::assembly);
  CHECK(parse_emit_kind("obj") == EmitKind::object);
  CHECK_THROWS_WITH_AS(parse_emit_kind("exe"), "unknown --emit kind 'exe' (expected llvm, asm, obj or program)", Error);
}
