#pragma once
// Differential testing of the JIT against the Interpreter: the same graph, the
// same bound tensors, outputs compared (f32 within an absolute + relative
// tolerance stated by each test; i32 and bool exactly; nan matches nan and
// infinities must agree exactly).
#include <cstdint>
#include <map>
#include <string>

#include "compiler/jit_executable.h"
#include "engine/ir/graph.h"
#include "engine/tensor/tensor.h"
#include "ir/random_graph.h"

namespace kiln::test {

// |actual - expected| <= abs + rel * |expected| + of_largest * (the largest finite
// |expected| in the tensor). The last term is for results that are sums of much
// larger terms (a matmul's small entries next to large ones): their f32 rounding
// is relative to the terms, not to themselves.
struct Tolerance {
  double abs = 0;
  double rel = 0;
  double of_largest = 0;
};

// What random values a test feeds: `any` mixes signs and magnitudes (mostly
// within [-4, 4], some large and small ones); `positive` stays > 0; `nonzero`
// avoids 0 (divisors); `moderate` stays within [-4, 4]; `integers` are whole
// numbers in [-3, 3], whose f32 products and sums of a few thousand are exact.
// i32 values are small, bool values fair coins.
enum class Values { any, positive, nonzero, moderate, integers };

Tensor random_tensor(Rng& rng, const TensorType& t, Values values = Values::any);

// A tensor for every declaration of g (inputs, params, state).
std::map<std::string, Tensor> random_bindings(const Graph& g, Rng& rng, Values values = Values::any);

// A graph with inputs x0, x1, ... of these types, one `op` node, and its results
// as outputs.
Graph one_op_graph(const std::string& op, const std::vector<TensorType>& operands, const Attrs& attrs = {});

// one_op_graph on random values, JIT against interpreter.
void check_op(const std::string& op, const std::vector<TensorType>& operands, const Attrs& attrs, Tolerance tol,
              Rng& rng, Values values = Values::any);

// examples/NAME.kir's bindings: inputs from examples/inputs/NAME/, params and
// state from their init schemes (seed 0).
std::map<std::string, Tensor> example_bindings(const Graph& g, const std::string& name);

// JIT options that only name the target CPU.
inline compiler::JitOptions jit_for_cpu(const std::string& cpu) {
  compiler::JitOptions options;
  options.target_cpu = cpu;
  return options;
}

// "" if equal within tolerance, else a description of the first mismatch. An
// f32 `slack` (expected's shape) adds its element to each element's room.
std::string compare_tensors(const Tensor& expected, const Tensor& actual, Tolerance tol,
                            const Tensor* slack = nullptr);

// Runs g with both backends on `bindings` (`steps` runs, so assigns feed back)
// and checks every output and every final param/state with doctest CHECKs.
void check_jit_matches_interpreter(const Graph& g, const std::map<std::string, Tensor>& bindings, Tolerance tol,
                                   int steps = 1, const compiler::JitOptions& options = {});

}  // namespace kiln::test
