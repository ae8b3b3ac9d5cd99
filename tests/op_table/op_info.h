#pragma once
// OpInfo: one row of the op table (op_table.h), what the generated tests need
// to know about one registered op, after PyTorch's OpInfo. Every check either
// runs on the row or the row says why it does not apply (the no_* fields);
// table_test.cpp holds the rows to that.
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autodiff/gradcheck.h"
#include "jit/differential.h"

namespace kiln::test {

// One call of the op: operand values and attributes (and a fusion's body).
struct Sample {
  std::vector<Tensor> operands;
  Attrs attrs{};
  std::string note{};  // what the sample is for, beyond random values ("special values", "size 0")
  std::shared_ptr<const Graph> body{};
};

// Operand types and attributes the op must reject with a kiln::Error naming it.
struct Signature {
  std::vector<TensorType> operands;
  Attrs attrs{};
  std::shared_ptr<const Graph> body{};
};

using SampleFn = std::function<std::vector<Sample>(Rng&)>;
// "" if the JIT's result `result` matches the interpreter's, else the mismatch.
using CompareFn =
    std::function<std::string(const Sample&, size_t result, const Tensor& expected, const Tensor& actual)>;
// Applied to each operand before the op and to each result after it (forward_check.h).
using Wrap = std::function<Value(Builder&, Value)>;
// The graph a forward sample runs in: inputs x0, x1, ... hold the operands.
using BuildFn = std::function<Graph(const Sample&, const Wrap&)>;
// The reference kernel's results computed another way (reference_test.cpp).
using ExpectedFn = std::function<std::vector<Tensor>(const Sample&)>;

struct OpInfo {
  std::string name{};

  // The dtypes each operand accepts, one list per operand (a variadic op's last
  // list covers the rest). Each must appear in some forward sample; any other
  // dtype is rejected (bad_input_test.cpp).
  std::vector<std::vector<DType>> dtypes{};

  // Forward: random shapes (scalars, size-1 dims, sizes off the vector widths,
  // broadcasting) and values, plus size-0, large and special-value samples where
  // they mean something. Each runs JIT against interpreter alone and wrapped in
  // elementwise producers and consumers through the default pipeline.
  SampleFn samples{};
  Tolerance tolerance{};  // abs + rel * |expected|; exact unless stated
  CompareFn compare{};    // replaces `tolerance` where abs + rel cannot state the bound
  BuildFn build{};        // default: the op alone on inputs; for an op that cannot be alone
  std::string no_fusion{};  // why the wrapped op stays out of every fusion node ("": it fuses)

  ExpectedFn expected{};  // optional: the reference kernel checked against it

  // Gradient by finite differences on these samples (values kept away from kinks).
  SampleFn grad_samples{};
  GradCheckOptions grad_options{};
  std::vector<size_t> grad_results{};  // results the loss weights (empty: all)
  std::string no_gradient{};           // why not, when grad_samples is empty
  // Grad of grad: the first gradient, of sum(results * W), checked by finite
  // differences with respect to the inputs and W.
  std::string no_grad_of_grad{};  // why not ("": it applies wherever the gradient does)

  // Shapes and attributes the op rejects (wrong ranks, broadcasting, axes), on
  // top of the generated wrong dtypes, operand counts and attributes.
  std::vector<Signature> invalid{};
  std::string no_invalid{};  // why there are none
};

}  // namespace kiln::test
