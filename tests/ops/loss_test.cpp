#include <doctest/doctest.h>

#include "ops/loss.h"
#include "ops/op_test_util.h"

using namespace kiln;
using kiln::test::build_error;
using kiln::test::check_close;
using kiln::test::result_types;
using kiln::test::run_op1;
using F = Tensor::F32;
using I = Tensor::I32;

namespace {

Tensor cross_entropy(const F& logits, const I& labels, double smoothing = 0.0, int64_t ignore_index = -100) {
  return run_op1("cross_entropy", {logits, labels}, {{"smoothing", smoothing}, {"ignore_index", ignore_index}});
}

// Row A = [1, 2, 3]: logsumexp = 3 + ln(1 + e^-1 + e^-2) = 3.4076059644,
//   log_softmax = [-2.4076059644, -1.4076059644, -0.4076059644], mean -1.4076059644.
// Row B = [100, 100.5, 98]: logsumexp = 100.5 + ln(e^-0.5 + 1 + e^-2.5) = 101.0239090562,
//   log_softmax = [-1.0239090562, -0.5239090562, -3.0239090562], mean -1.5239090562.
// Row C is ignored wherever it appears (label -100).
const F kLogits = {{1.0f, 2.0f, 3.0f}, {100.0f, 100.5f, 98.0f}, {5.0f, 0.0f, 0.0f}};
const I kLabels = {0, 2, -100};

}  // namespace

TEST_CASE("cross_entropy of one position") {
  // Equal logits over 2 classes: -log(1/2).
  check_close(cross_entropy(F{0.0f, 0.0f}, I(0)), F(0.6931472f));
  // Softmax [1/4, 3/4]: -log(3/4).
  check_close(cross_entropy(F{0.0f, std::log(3.0f)}, I(1)), F(0.2876821f));
}

TEST_CASE("cross_entropy averages over the positions that are not ignored") {
  // (2.4076059644 + 3.0239090562) / 2
  check_close(cross_entropy(kLogits, kLabels), F(2.7157575103f));
}

TEST_CASE("cross_entropy with label smoothing") {
  // Row A: 0.9 * 2.4076059644 + 0.1 * 1.4076059644 = 2.3076059644
  // Row B: 0.9 * 3.0239090562 + 0.1 * 1.5239090562 = 2.8739090562
  check_close(cross_entropy(kLogits, kLabels, 0.1), F(2.5907575103f));
  // smoothing 1: the mean of -log_softmax over all classes, whatever the label.
  check_close(cross_entropy(F{1.0f, 2.0f, 3.0f}, I(2), 1.0), F(1.4076059644f));
}

TEST_CASE("cross_entropy with another ignore_index and nothing kept and batch dims") {
  // ignore_index 2 drops row B; row C's label 1 is kept: -log_softmax([5,0,0])[1] = 5 + ln(1 + 2e^-5) = 5.0133857.
  check_close(cross_entropy(kLogits, I{0, 2, 1}, 0.0, 2), F((2.4076059644f + 5.0133857f) / 2));
  check_close(cross_entropy(kLogits, I{-100, -100, -100}), F(0.0f));
  // logits [2,1,3] with labels [2,1]: the same rows A and B.
  const F batched = kiln::test::shaped<float>({2, 1, 3}, {1, 2, 3, 100, 100.5f, 98});
  check_close(cross_entropy(batched, kiln::test::shaped<int32_t>({2, 1}, {0, 2})), F(2.7157575103f));
}

TEST_CASE("cross_entropy is stable for large logits") {
  // Naive exp(1000) overflows; the shifted form gives -log_softmax([1000, 0])[1] = 1000 + ln(1 + e^-1000) = 1000.
  check_close(cross_entropy(F{1000.0f, 0.0f}, I(1)), F(1000.0f));
  check_close(cross_entropy(F{1000.0f, 0.0f}, I(0)), F(0.0f));
}

TEST_CASE("cross_entropy rejects labels out of range at run time") {
  CHECK_THROWS_WITH_AS(
      cross_entropy(kLogits, I{0, 3, 1}),
      "cross_entropy: label 3 (at flat position 1) is out of range [0, 3) and is not ignore_index -100", Error);
  CHECK_THROWS_WITH_AS(cross_entropy(kLogits, I{-1, 0, 0}, 0.0, -7),
                       "cross_entropy: label -1 (at flat position 0) is out of range [0, 3) and is not ignore_index -7",
                       Error);
}

TEST_CASE("cross_entropy inference") {
  CHECK(result_types("cross_entropy", {{DType::f32, {4, 5, 7}}, {DType::i32, {4, 5}}}) ==
        std::vector<TensorType>{{DType::f32, {}}});
  CHECK(build_error("cross_entropy", {{DType::f32, {3, 3}}, {DType::f32, {3}}}) ==
        "cross_entropy(f32[3,3], f32[3]): labels must be i32, got f32");
  CHECK(build_error("cross_entropy", {{DType::f32, {3, 3}}, {DType::i32, {4}}}) ==
        "cross_entropy(f32[3,3], i32[4]): labels must have the logits' shape without the last axis, [3], got [4]");
  CHECK(build_error("cross_entropy", {{DType::i32, {3, 3}}, {DType::i32, {3}}}) ==
        "cross_entropy(i32[3,3], i32[3]): logits must be f32, got i32");
  CHECK(build_error("cross_entropy", {{DType::f32, {}}, {DType::i32, {}}}) ==
        "cross_entropy(f32[], i32[]): logits must have at least rank 1, got rank 0");
  CHECK(build_error("cross_entropy", {{DType::f32, {3}}, {DType::i32, {}}}, {{"smoothing", 1.5}}) ==
        "cross_entropy(f32[3], i32[]): smoothing must be in [0, 1], got 1.5");
}

TEST_CASE("cross_entropy builder helper") {
  Graph g("loss");
  Builder b(g);
  const Value logits = b.input("logits", {DType::f32, {3, 3}});
  const Value labels = b.input("labels", {DType::i32, {3}});
  const Value loss = ops::cross_entropy(b, logits, labels, 0.1);
  b.output(loss);
  Interpreter interp(std::move(g));
  interp.bind("logits", Tensor(kLogits));
  interp.bind("labels", Tensor(kLabels));
  interp.run();
  check_close(interp.output(interp.graph().name_of(loss)), F(2.5907575103f));
}
