// One graph is one training step: the MLP example trains with the interpreter.
#include <doctest/doctest.h>

#include "engine/interpreter.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "engine/param_init.h"
#include "gradcheck.h"
#include "models/optimizer.h"

using namespace kiln;

namespace {

// Trains examples/mlp.kir on a fixed synthetic batch for `steps` steps and returns
// the loss of the first and the last step.
std::pair<float, float> train_mlp(const std::function<void(Graph&, Value)>& append_optimizer, int steps) {
  Graph g = parse_kir_file(std::string(KILN_SOURCE_DIR) + "/examples/mlp.kir");
  append_optimizer(g, *g.find("loss"));
  verify(g);
  Interpreter exe(g);
  exe.bind("x", kiln::test::random_tensor({8, 16}, 7));
  exe.bind("labels", Tensor(Tensor::I32{0, 1, 2, 3, 3, 2, 1, 0}));
  bind_initial_values(exe, 42);
  float first = 0, last = 0;
  for (int i = 0; i < steps; ++i) {
    exe.run();
    last = exe.output("loss").f32()();
    if (i == 0) first = last;
  }
  CHECK(exe.binding("step").i32()() == steps);
  return {first, last};
}

}  // namespace

TEST_CASE("the MLP example trains with Adam: loss falls at least 10x") {
  const auto [first, last] = train_mlp(
      [](Graph& g, Value loss) {
        AdamOptions opts;
        opts.constant_lr = 0.01;
        append_adam(g, loss, opts);
      },
      150);
  MESSAGE("adam: loss ", first, " -> ", last);
  CHECK(last * 10 < first);
}

TEST_CASE("the MLP example trains with SGD: loss falls at least 10x") {
  const auto [first, last] = train_mlp([](Graph& g, Value loss) { append_sgd(g, loss, {0.5}); }, 300);
  MESSAGE("sgd: loss ", first, " -> ", last);
  CHECK(last * 10 < first);
}

TEST_CASE("the warm-up schedule is the paper's") {
  Graph g = parse_kir_file(std::string(KILN_SOURCE_DIR) + "/examples/mlp.kir");
  AdamOptions opts;
  opts.d_model = 64;
  opts.warmup = 3;
  opts.factor = 2.0;
  append_adam(g, *g.find("loss"), opts);
  Interpreter exe(g);
  exe.bind("x", kiln::test::random_tensor({8, 16}, 7));
  exe.bind("labels", Tensor(Tensor::I32{0, 1, 2, 3, 3, 2, 1, 0}));
  bind_initial_values(exe, 1);
  for (int step = 1; step <= 6; ++step) {
    exe.run();
    const double want = 2.0 / 8.0 * std::min(std::pow(step, -0.5), step * std::pow(3.0, -1.5));
    CHECK(exe.output("lr").f32()() == doctest::Approx(want).epsilon(1e-6));
  }
}

TEST_CASE("the training-step graph prints and reparses to the same text") {
  Graph g = parse_kir_file(std::string(KILN_SOURCE_DIR) + "/examples/mlp.kir");
  append_adam(g, *g.find("loss"), {});
  const std::string text = print_kir(g);
  CHECK(print_kir(parse_kir(text, "train.kir")) == text);
}
