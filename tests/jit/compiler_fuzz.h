#pragma once
// Differential fuzzing of the compiler. For one graph, the interpreter is the
// oracle; the JIT runs it under every pipeline of a list, at 1 and 2 threads, 2
// steps each (so assigns feed back), and every output and final param/state
// must match the interpreter's within kFuzzTolerance (the random graph test's:
// abs 1e-4 + rel 1e-4, room for chains of fast exp/log/tanh and f32 sums in
// another order, plus 1e-6 of the tensor's largest |expected| for small entries
// of products whose terms are large; plus 8 times how far the element moves when
// the f32 bindings are nudged by 4 ulps, room for ill-conditioned elements such as
// sums of large terms that cancel; i32 and bool exact, nan matches nan,
// infinities exact). A run-
// time error of the interpreter must be the JIT's, word for word, at the same
// step. A difference that follows from a comparison the JIT decided the other way
// where its operands were tied (within that tolerance of each other) is rounding,
// not a bug: it is excused, counted apart and never shrunk. A failure is shrunk
// (ir/shrink_graph.h) under its own pipeline and thread count, and saved as a
// .kir regression (tests/jit/fuzz_regressions/).
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "compiler/pipeline.h"
#include "engine/ir/graph.h"
#include "engine/tensor/tensor.h"
#include "jit/differential.h"

namespace kiln::test {

inline constexpr Tolerance kFuzzTolerance{1e-4, 1e-4, 1e-6};
// With bf16-matmuls or bf16-saves, against the interpreter's run of the bf16 graph: an operand
// the two backends computed a few f32 ulps apart may round to neighbouring bf16
// values, 2^-8 apart, and move a product by that much of its terms.
inline constexpr Tolerance kBf16FuzzTolerance{1e-3, 1.0 / 256, 1.0 / 256};

struct FuzzPipeline {
  std::string name;  // as --passes and the flags spell it: "none", "cse", "default --no-reuse", ...
  compiler::PipelineOptions options;
};

// No pass; each pass alone; the default pipeline; the default with --no-reuse;
// the default without assigns updated in place. Passes verify the graph after each.
std::vector<FuzzPipeline> fuzz_pipelines();

struct FuzzFailure {
  std::string pipeline;
  int threads = 0;
  std::string kind;    // "compile" (the JIT threw building it), "error" (run-time errors differ), "result"
  std::string detail;  // what differs first
  // Non-empty: the JIT decided an f32 comparison the other way at a tie (and
  // nowhere else), which explains the difference; names the node, step and element.
  std::string tie;

  bool excused() const { return !tie.empty(); }

  // Same pipeline, thread count and kind: what the shrinker keeps.
  bool same_way(const FuzzFailure& other) const;
  std::string str() const;
};

// What the fuzzer binds: random_bindings (Values::moderate) seeded by a hash of
// g's .kir text, so a graph read back from its .kir file gets the same values.
std::map<std::string, Tensor> fuzz_bindings(const Graph& g);

// Where the JIT's result `got` of an f32 comparison of a and b (broadcasting)
// differs from the interpreter's `want`: nowhere; only where a and b are tied
// (within kFuzzTolerance's abs + rel of each other, the room the fuzzer gives any
// f32 result, so either outcome is right); or somewhere they are not (a real
// difference). `element` (of the result), a and b: the first such place.
struct DecisionFlips {
  enum Kind { none, at_ties, elsewhere } kind = none;
  size_t element = 0;
  float a = 0, b = 0;
};
DecisionFlips decision_flips(const Tensor& a, const Tensor& b, const Tensor& want, const Tensor& got,
                             Tolerance tol = kFuzzTolerance);

// The first failure of g over pipelines x threads that is not excused; else the
// first excused one; else nothing.
std::optional<FuzzFailure> check_compiler(const Graph& g, const std::vector<FuzzPipeline>& pipelines,
                                          const std::vector<int>& threads = {1, 2});

struct Shrunk {
  Graph graph;
  FuzzFailure failure;  // the shrunk graph's own
  int tries = 0;
};

// Shrinks g, on which `failure` happened, checking only its pipeline and thread count.
Shrunk shrink_failure(const Graph& g, const FuzzFailure& failure);

// Writes DIR/NAME.kir: a comment naming the seed that made the graph and the
// failure, then the shrunk graph's .kir. Returns the path.
std::string save_regression(const Shrunk& shrunk, uint64_t seed, const std::string& dir, const std::string& name);

}  // namespace kiln::test
