// The Transformer's loss as linear_cross_entropy (TransformerConfig::fused_loss,
// the default) against the output projection's matmul then cross_entropy: the
// same loss and the same step, and no [tokens, vocab] buffer in the program.
#include <doctest/doctest.h>

#include <xtensor/xsort.hpp>

#include "compiler/backend.h"
#include "compiler/pipeline.h"
#include "engine/ir/graph.h"
#include "models/transformer/transformer.h"
#include "transformer_test_inputs.h"

using namespace kiln;
using namespace kiln::models;

namespace {

TransformerConfig config(bool fused) {
  TransformerConfig cfg = test::tiny_config(16, 0.0);
  cfg.fused_loss = fused;
  return cfg;
}

std::unique_ptr<Executable> step(bool fused, const std::string& backend) {
  AdamOptions adam;
  adam.d_model = 128;
  compiler::BackendOptions opts;
  opts.backend = backend;
  opts.threads = 2;
  auto exe = compiler::make_executable(build_train_graph(config(fused), 2, 6, 6, adam), opts);
  test::bind_batch(*exe, test::sample_batch(6));
  bind_initial_values(*exe, 5);
  exe->run();
  return exe;
}

// The largest buffer of the program whose last axis is the vocabulary (16), in elements.
int64_t largest_vocab_buffer(const compiler::Program& p) {
  int64_t largest = 0;
  for (const compiler::ProgramBuffer& b : p.buffers)
    if (!b.type.shape.empty() && b.type.shape.back() == 16 && b.type.shape.size() >= 2)
      largest = std::max(largest, b.type.numel());
  return largest;
}

}  // namespace

TEST_CASE("the fused loss is the loss of the logits, and one step moves the params alike") {
  for (const std::string backend : {"interp", "jit"}) {
    CAPTURE(backend);
    const auto fused = step(true, backend), unfused = step(false, backend);
    CHECK(fused->output("loss").f32()() == doctest::Approx(unfused->output("loss").f32()()).epsilon(1e-5));
    for (const auto& [name, type] : param_types(config(true))) {
      INFO("param %", name);
      // Adam's first moment is 0.1 * the gradient: compared to 1e-3 of its largest entry.
      const Tensor::F32& m_ref = unfused->binding(name + ".adam_m").f32();
      const Tensor::F32& m = fused->binding(name + ".adam_m").f32();
      CHECK(xt::amax(xt::abs(m - m_ref))() <= 1e-3f * xt::amax(xt::abs(m_ref))() + 1e-9f);
    }
  }
}

TEST_CASE("the fused loss's step keeps no [tokens, vocab] buffer") {
  AdamOptions adam;
  adam.d_model = 128;
  const auto compiled = [&](bool fused) {
    return compiler::compile_graph(build_train_graph(config(fused), 4, 8, 8, adam)).program;
  };
  const compiler::Program fused = compiled(true), unfused = compiled(false);
  // Unfused: the logits [32, 16] and their gradient; fused: nothing per token and class.
  CHECK(largest_vocab_buffer(unfused) == 32 * 16);
  CHECK(largest_vocab_buffer(fused) == 0);
  // The loss and its gradient are one kernel (linear-cross-entropy: the logits made once).
  int kernels = 0;
  for (const compiler::Kernel& k : fused.kernels) {
    kernels += k.label.rfind("linear_cross_entropy", 0) == 0;
    CHECK((k.label.rfind("linear_cross_entropy", 0) != 0 || k.label == "linear_cross_entropy_train"));
  }
  CHECK(kernels == 1);
}
