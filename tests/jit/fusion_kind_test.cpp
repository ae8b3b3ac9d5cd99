// A fusion records its kind and roles (engine/ir/fusion_kind.h) and codegen
// dispatches on them, an emitter per kind, without working the structure out
// again: a body that does not fit its kind and roles is refused by the
// verifier (verify_fusion: in a .kir file, at the fusion's line and column),
// before codegen sees it. (That every kind the fusion pass makes matches the
// interpreter is fusion_test's and the compiler fuzzer's.)
#include <doctest/doctest.h>

#include <string>

#include "compiler/jit_executable.h"
#include "engine/ir/error.h"
#include "engine/ir/parser.h"

using namespace kiln;

namespace {

// The .kir of a graph whose one fusion has `attrs` and computes its output %r
// of type `type` from an input %p0 : f32[4,8].
std::string fusion_kir(const std::string& attrs, const std::string& body, const std::string& type) {
  return "graph @g {\n"
         "  input %x : f32[4,8]\n"
         "  %y = fusion(%x) {" + attrs + "} : " + type + " graph @f {\n"
         "    input %p0 : f32[4,8]\n" + body +
         "    output %r\n"
         "  }\n"
         "  output %y\n"
         "}\n";
}

// The message of parsing, then compiling with no pass, `text`; "" if both succeed.
std::string error_of(const std::string& text) {
  try {
    const Graph g = parse_kir(text, "g.kir");
    compiler::JitOptions options;
    options.pipeline.passes.passes = {std::string(compiler::kNoPasses)};
    options.kernels.cache = false;
    compiler::JitExecutable exe(g, options);
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("a fusion whose body does not fit its kind and roles is refused at its place, naming the kind and role") {
  const std::string row_sum = "    %r = sum(%p0) {axes=[1], keepdims=true} : f32[4,1]\n";
  struct Case {
    std::string attrs, body, type, message;
  };
  const Case cases[] = {
      {"kind=\"loop\"", row_sum, "f32[4,1]", "fusion of kind loop: %r (sum) is not elemental"},
      {"kind=\"row\"", "    %r = exp(%p0) : f32[4,8]\n", "f32[4,8]",
       "fusion of kind row: it names no reductions"},
      {"kind=\"row\", reductions=[0]", "    %e = exp(%p0) : f32[4,8]\n    %r = neg(%e) : f32[4,8]\n", "f32[4,8]",
       "fusion of kind row: %e (exp) is not a reduction over the last axis of [4,8]"},
      {"hero=0, kind=\"epilogue\"", "    %s = softmax(%p0) : f32[4,8]\n    %r = exp(%s) : f32[4,8]\n", "f32[4,8]",
       "fusion of kind epilogue: its hero %s (softmax) takes no epilogue"},
      {"hero=0, kind=\"input\"",
       "    %s = sum(%p0) {axes=[1], keepdims=true} : f32[4,1]\n    %r = exp(%s) : f32[4,1]\n", "f32[4,1]",
       "fusion of kind input: its outputs are not the results of its hero %s (sum)"},
      {"kind=\"input\"", row_sum, "f32[4,1]", "fusion of kind input: it names no hero"},
      {"hero=3, kind=\"input\"", row_sum, "f32[4,1]", "fusion of kind input: hero 3 is not a node of its body"},
      {"hero=0, kind=\"loop\"", "    %r = exp(%p0) : f32[4,8]\n", "f32[4,8]",
       "fusion of kind loop: it has no hero, but names hero 0"},
      // A horizontal fusion's parts are loop fusions, each verified as one.
      {"kind=\"horizontal\"",
       "    %r = fusion(%p0) {kind=\"loop\"} : f32[4,1] graph @part {\n"
       "      input %q0 : f32[4,8]\n"
       "      %s = sum(%q0) {axes=[1], keepdims=true} : f32[4,1]\n"
       "      output %s\n"
       "    }\n",
       "f32[4,1]", "fusion of kind loop: %s (sum) is not elemental"},
  };
  for (const Case& c : cases) {
    CAPTURE(c.attrs);
    const std::string message = error_of(fusion_kir(c.attrs, c.body, c.type));
    CAPTURE(message);
    CHECK(message.rfind("g.kir:", 0) == 0);  // a parse error, at the fusion
    CHECK(message.find(c.message) != std::string::npos);
  }
  // Parts that do not run side by side are codegen's to refuse.
  const std::string reads_part = error_of(fusion_kir("kind=\"horizontal\"",
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
                                                     "f32[4,8]"));
  CHECK(reads_part.find("codegen: kernel @k of kind horizontal: a part reads %t0, another part's result") !=
        std::string::npos);
  // The same bodies compile under the kind and roles that fit them.
  CHECK(error_of(fusion_kir("hero=0, kind=\"input\"", row_sum, "f32[4,1]")).empty());
  CHECK(error_of(fusion_kir("reductions=[0], kind=\"row\"",
                            "    %s = sum(%p0) {axes=[1], keepdims=true} : f32[4,1]\n"
                            "    %r = sub(%p0, %s) : f32[4,8]\n",
                            "f32[4,8]"))
            .empty());
  CHECK(error_of(fusion_kir("kind=\"loop\"", "    %r = exp(%p0) : f32[4,8]\n", "f32[4,8]")).empty());
}
