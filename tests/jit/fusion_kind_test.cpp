// Codegen dispatches on a fusion's kind (engine/ir/fusion_kind.h), an emitter
// per kind, and refuses a body that does not fit its kind, naming the kernel and
// the kind, instead of working out another structure. (That every kind the
// fusion pass makes matches the interpreter is fusion_test's and the compiler
// fuzzer's.)
#include <doctest/doctest.h>

#include <string>

#include "compiler/jit_executable.h"
#include "engine/ir/error.h"
#include "engine/ir/parser.h"

using namespace kiln;

namespace {

// The message of compiling, with no pass, a graph whose one fusion has `kind`
// and computes its output %r of type `type` from an input %p0 : f32[4,8].
std::string compile_error(const std::string& kind, const std::string& body, const std::string& type) {
  const Graph g = parse_kir(
      "graph @g {\n"
      "  input %x : f32[4,8]\n"
      "  %y = fusion(%x) {kind=\"" + kind + "\"} : " + type + " graph @f {\n"
      "    input %p0 : f32[4,8]\n" + body +
      "    output %r\n"
      "  }\n"
      "  output %y\n"
      "}\n",
      "g.kir");
  compiler::JitOptions options;
  options.pipeline.passes.passes = {std::string(compiler::kNoPasses)};
  options.kernels.cache = false;
  try {
    compiler::JitExecutable exe(g, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a fusion whose body does not fit its kind is a compile error naming the kernel and the kind") {
  const std::string row_sum = "    %r = sum(%p0) {axes=[1], keepdims=true} : f32[4,1]\n";
  struct Case {
    std::string kind, body, type, message;
  };
  const Case cases[] = {
      {"loop", row_sum, "f32[4,1]", "of kind loop: %t0 (sum) is not elemental"},
      {"row", "    %r = exp(%p0) : f32[4,8]\n", "f32[4,8]", "of kind row: no reduction"},
      {"epilogue", "    %s = softmax(%p0) : f32[4,8]\n    %r = exp(%s) : f32[4,8]\n", "f32[4,8]",
       "of kind epilogue: softmax takes no epilogue"},
      {"input", "    %s = sum(%p0) {axes=[1], keepdims=true} : f32[4,1]\n    %r = exp(%s) : f32[4,1]\n", "f32[4,1]",
       "of kind input: its outputs are not the results of sum"},
      // A horizontal fusion's parts are loop fusions: each is compiled as one.
      {"horizontal",
       "    %r = fusion(%p0) {kind=\"loop\"} : f32[4,1] graph @part {\n"
       "      input %q0 : f32[4,8]\n"
       "      %s = sum(%q0) {axes=[1], keepdims=true} : f32[4,1]\n"
       "      output %s\n"
       "    }\n",
       "f32[4,1]", "kernel @part of kind loop: %s (sum) is not elemental"},
      {"horizontal",
       "    %a = fusion(%p0) {kind=\"loop\"} : f32[4,8] graph @a {\n"
       "      input %q0 : f32[4,8]\n"
       "      %e = exp(%q0) : f32[4,8]\n"
       "      output %e\n"
       "    }\n"
       "    %r = fusion(%a) {kind=\"loop\"} : f32[4,8] graph @b {\n"
       "      input %q0 : f32[4,8]\n"
       "      %e = neg(%q0) : f32[4,8]\n"
       "      output %e\n"
       "    }\n",
       "f32[4,8]", "of kind horizontal: a part reads %t0, another part's result"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.kind);
    const std::string message = compile_error(c.kind, c.body, c.type);
    CAPTURE(message);
    CHECK(message.find("codegen: kernel @") != std::string::npos);
    CHECK(message.find(c.message) != std::string::npos);
  }
  // The same bodies compile under the kind that fits them.
  CHECK(compile_error("input", row_sum, "f32[4,1]").empty());
  CHECK(compile_error("loop", "    %r = exp(%p0) : f32[4,8]\n", "f32[4,8]").empty());
}
