// One whole training step of the tiny Transformer (forward, backward, Adam) on
// the JIT against the interpreter.
#include <doctest/doctest.h>

#include <cmath>
#include <xtensor/xsort.hpp>

#include "compiler/backend.h"
#include "compiler/pipeline.h"
#include "models/transformer/transformer.h"
#include "transformer_test_inputs.h"

using namespace kiln;
using namespace kiln::models;

TEST_CASE("the JIT matches the interpreter on one tiny training step") {
  const TransformerConfig cfg = test::tiny_config(16, 0.1);
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  auto step_on = [&](const std::string& backend) {
    compiler::BackendOptions opts;
    opts.backend = backend;
    opts.threads = 2;
    auto exe = compiler::make_executable(build_train_graph(cfg, 2, 6, 6, adam), opts);
    test::bind_batch(*exe, test::sample_batch(6));
    bind_initial_values(*exe, 5);
    exe->run();
    return exe;
  };
  const auto interp = step_on("interp");
  const auto jit = step_on("jit");

  // The loss goes through ~1000 f32 ops whose order of summation differs between
  // backends (blocked GEMM, vectorized reductions): agreement to 1e-5 relative.
  const float loss = interp->output("loss").f32()();
  CHECK(jit->output("loss").f32()() == doctest::Approx(loss).epsilon(1e-5));
  CHECK(jit->output("lr").f32()() == doctest::Approx(interp->output("lr").f32()()).epsilon(1e-6));
  CHECK(jit->binding("step").i32()() == 1);

  const float lr = interp->output("lr").f32()();
  for (const auto& [name, type] : param_types(cfg)) {
    INFO("param %", name);
    // Adam's first moment is 0.1 * the gradient: the backward pass, compared to
    // 1e-3 of the tensor's largest entry (gradients are sums of many products of
    // differently rounded terms, and entries near zero only have absolute accuracy).
    const Tensor::F32& m_ref = interp->binding(name + ".adam_m").f32();
    const Tensor::F32& m_jit = jit->binding(name + ".adam_m").f32();
    const float scale = xt::amax(xt::abs(m_ref))();
    CHECK(xt::amax(xt::abs(m_jit - m_ref))() <= 1e-3f * scale + 1e-9f);
    // The first step moves each param by at most lr (Adam's normalized step), in
    // either backend's direction where a gradient is zero up to rounding (e.g.
    // attention's key bias, whose exact gradient is zero).
    const Tensor::F32& p_ref = interp->binding(name).f32();
    const Tensor::F32& p_jit = jit->binding(name).f32();
    CHECK(xt::amax(xt::abs(p_jit - p_ref))() <= 2.01f * lr + 1e-6f);
  }
}

TEST_CASE("--precision bf16: the JIT matches the interpreter, and the loss stays within 1% of f32's") {
  const TransformerConfig cfg = test::tiny_config(16, 0.1);
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  auto loss_on = [&](const std::string& backend, DType precision) {
    compiler::BackendOptions opts;
    opts.backend = backend;
    opts.threads = 2;
    opts.pipeline.passes.precision = precision;
    auto exe = compiler::make_executable(build_train_graph(cfg, 2, 6, 6, adam), opts);
    test::bind_batch(*exe, test::sample_batch(6));
    bind_initial_values(*exe, 5);
    exe->run();
    return exe->output("loss").f32()();
  };
  const float interp = loss_on("interp", DType::bf16), jit = loss_on("jit", DType::bf16);
  const float f32 = loss_on("interp", DType::f32);
  // Both round the same operands; a product's inputs that differ in their last
  // f32 bits may round to neighbouring bf16 values (2^-8 apart), so agreement is
  // looser than in f32.
  CHECK(jit == doctest::Approx(interp).epsilon(1e-3));
  CHECK(interp != f32);  // the operands were rounded
  CHECK(interp == doctest::Approx(f32).epsilon(1e-2));
}

TEST_CASE("the compiler fuses the tiny training step: attention, matmul epilogues, fewer kernels, a sound plan") {
  const TransformerConfig cfg = test::tiny_config(16, 0.1);
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  const Graph g = build_train_graph(cfg, 2, 6, 6, adam);
  const compiler::CompiledGraph c = compiler::compile_graph(g);
  int attention = 0, attention_backward = 0, epilogues = 0;
  for (const Node& n : c.graph.nodes()) {
    if (n.op() == "flash_attention") ++attention;
    if (n.op() == "flash_attention_backward") ++attention_backward;
    if (n.body && n.attrs.get_string("kind") == "epilogue") ++epilogues;
  }
  // One forward and one backward kernel per attention block (flash_attention, so
  // no scores in memory): encoder self, decoder self and cross, per layer.
  CHECK(attention == cfg.enc_layers + 2 * cfg.dec_layers);
  CHECK(attention_backward == cfg.enc_layers + 2 * cfg.dec_layers);
  // Matmuls with epilogues: in the forward pass each attention output projection
  // (+ bias, dropout, residual), FFN's first layer (+ bias) and second (+ bias,
  // dropout, residual); more in the backward pass.
  CHECK(epilogues > 3 * cfg.enc_layers + 4 * cfg.dec_layers);
  MESSAGE(g.nodes().size() << " nodes -> " << c.program.calls.size() << " kernel calls of " << c.program.kernels.size()
                           << " distinct kernels; arena " << c.program.plan.arena_bytes << " of "
                           << c.program.plan.naive_bytes << " bytes");
  CHECK(c.program.calls.size() * 10 < g.nodes().size() * 4);
  CHECK(compiler::check_memory_plan(compiler::plan_buffers(c.program), compiler::plan_steps(c.program), c.program.plan)
            .empty());
  CHECK(c.program.plan.arena_bytes < c.program.plan.naive_bytes);
  // Adam's update of each weight matrix but the shared embeddings runs in the
  // epilogue of the matmul that finishes its gradient, which stores the
  // gradient and writes the param and its moments; the embeddings' gradient
  // comes from linear_cross_entropy_backward (the fused loss, a kernel of its
  // own) and the gathers' scatter-adds, so its update joins the biases' and
  // layer norms' in one horizontal kernel.
  // Each of those in epilogues sums the bias gradient as it packs dy (a fifth result).
  int updates_in_epilogues = 0, with_bias_gradient = 0, horizontal = 0;
  for (const Node& n : c.graph.nodes()) {
    horizontal += n.body && n.attrs.get_string("kind") == "horizontal";
    const bool epilogue = n.body && n.attrs.get_string("kind") == "epilogue";
    updates_in_epilogues += epilogue && n.results.size() >= 4;
    with_bias_gradient += epilogue && n.results.size() == 5;
  }
  int weight_matrices = 0;
  for (Value p : g.declarations(ValueKind::param)) weight_matrices += g.type(p).shape.size() == 2;
  CHECK(updates_in_epilogues == weight_matrices - 1);
  CHECK(with_bias_gradient == weight_matrices - 1);
  CHECK(horizontal == 1);
  // Every param and moment is written in place; only the step counter, whose
  // old value dropout's backward still reads after the new one is computed
  // (before the backward pass, for the updates), is committed at the end.
  // So in bf16 too, where the matmuls read each param through its bf16 cast,
  // which their GEMMs make as they pack it: no cast of a param is left (with
  // more than 32 rows: the few-rows GEMM reads a cast param as stored).
  compiler::PipelineOptions bf16;
  bf16.passes.precision = DType::bf16;
  const compiler::CompiledGraph cb = compiler::compile_graph(build_train_graph(cfg, 6, 6, 6, adam), bf16);
  for (const compiler::CompiledGraph* compiled : {&c, &cb}) {
    for (const auto& [target, value] : compiled->program.assigns) {
      CAPTURE(compiled->program.buffers[static_cast<size_t>(target)].name);
      CHECK((compiled->program.buffers[static_cast<size_t>(value)].alias == target) !=
            (compiled->program.buffers[static_cast<size_t>(target)].name == kStepState));
    }
  }
  for (const Node& n : cb.graph.nodes())
    if (n.op() == "cast") CHECK(cb.graph.value(n.operands[0]).kind == ValueKind::result);
}

TEST_CASE("in bf16 the step keeps what its backward reads in bf16: attention's q, k, v, o, layer norms' inputs") {
  // bf16-matmuls already keeps the matmuls' operands in bf16; bf16-saves the
  // rest, so every activation the backward reads is a bf16 copy and the
  // planned temporaries shrink with them (base at 4,096 tokens: 0.53x f32).
  const TransformerConfig cfg = test::tiny_config(64, 0.1);
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  const Graph g = build_train_graph(cfg, 16, 16, 16, adam);
  compiler::PipelineOptions bf16, matmuls_only;
  bf16.passes.precision = DType::bf16;
  matmuls_only.passes.passes = compiler::pipeline_passes(bf16.passes);
  std::erase(matmuls_only.passes.passes, "bf16-saves");
  const compiler::CompiledGraph f32 = compiler::compile_graph(g), saves = compiler::compile_graph(g, bf16),
                                matmuls = compiler::compile_graph(g, matmuls_only);
  int attentions = 0;
  for (const Node& n : saves.graph.nodes()) {
    if (n.op() != "flash_attention" && n.op() != "flash_attention_backward") continue;
    ++attentions;
    CHECK(saves.graph.type(n.operands[0]).dtype == DType::bf16);
    if (n.op() == "flash_attention_backward") CHECK(saves.graph.type(n.operands[4]).dtype == DType::bf16);
  }
  CHECK(attentions == 2 * (cfg.enc_layers + 2 * cfg.dec_layers));
  const double f32_bytes = static_cast<double>(f32.program.plan.arena_bytes);
  MESSAGE("tiny step B=16 arena: f32 " << f32_bytes << ", bf16-matmuls " << matmuls.program.plan.arena_bytes
                                        << ", with bf16-saves " << saves.program.plan.arena_bytes);
  CHECK(static_cast<double>(saves.program.plan.arena_bytes) < 0.85 * static_cast<double>(matmuls.program.plan.arena_bytes));
  CHECK(compiler::check_memory_plan(compiler::plan_buffers(saves.program), compiler::plan_steps(saves.program),
                                    saves.program.plan)
            .empty());
}

TEST_CASE("rows with nothing to attend to give a finite loss and gradients on both backends") {
  // Row 1's source is all padding (its encoder attends to nothing, and so does
  // the decoder's cross-attention), and its target starts with padding (the first
  // target positions see only padded keys under the causal mask).
  const TransformerConfig cfg = test::tiny_config(16, 0.0);
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  const test::TokenBatch batch{test::tokens({{3, 4, 5, 6}, {0, 0, 0, 0}}), test::tokens({{1, 7, 8, 9}, {0, 0, 1, 7}}),
                               test::tokens({{7, 8, 9, 2}, {0, 0, 7, 2}})};
  for (const char* backend : {"interp", "jit"}) {
    INFO("backend " << backend);
    compiler::BackendOptions opts;
    opts.backend = backend;
    auto exe = compiler::make_executable(build_train_graph(cfg, 2, 4, 4, adam), opts);
    test::bind_batch(*exe, batch);
    bind_initial_values(*exe, 5);
    exe->run();
    CHECK(std::isfinite(exe->output("loss").f32()()));
    for (const auto& [name, type] : param_types(cfg)) {
      INFO("param " << name);
      CHECK(xt::all(xt::isfinite(exe->binding(name + ".adam_m").f32())));
      CHECK(xt::all(xt::isfinite(exe->binding(name).f32())));
    }
  }
}
