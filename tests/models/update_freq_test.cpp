// Gradient accumulation (--update-freq): an update's batch cut into N parts
// equals the whole batch, to float tolerance, however its target tokens are
// spread among the parts.
#include <doctest/doctest.h>

#include <cmath>
#include <sstream>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "cli/temp_dir.h"
#include "compiler/backend.h"
#include "models/run/executable_cache.h"
#include "models/train/trainer.h"
#include "models/transformer/transformer.h"
#include "interpreter_run.h"
#include "transformer_test_inputs.h"

using namespace kiln;
using namespace kiln::models;

namespace {

Tensor rows_of(const Tensor& t, std::size_t from, std::size_t to) {
  return Tensor(Tensor::I32(xt::view(t.i32(), xt::range(from, to), xt::all())));
}

int64_t tokens_of(const Tensor& tgt_out) { return static_cast<int64_t>(xt::sum(xt::not_equal(tgt_out.i32(), 0))()); }

}  // namespace

// Dropout keyed by each part's first row draws the whole batch's masks, so
// the equality holds with dropout on too.
TEST_CASE("a batch cut into two parts updates the params as the whole batch does, dropout off and on") {
  for (const double dropout : {0.0, 0.3}) {
    INFO("dropout " << dropout);
    const TransformerConfig cfg = test::tiny_config(16, dropout);
    AdamOptions adam;
    adam.d_model = cfg.d_model;
    const test::TokenBatch both = test::sample_batch(6);  // two rows with different token counts
    compiler::BackendOptions exec;
    exec.backend = "interp";

    auto whole = compiler::make_executable(build_train_graph(cfg, 2, 6, 6, adam), exec);
    bind_initial_values(*whole, 7);
    whole->bind("src", both.src);
    whole->bind("tgt_in", both.tgt_in);
    whole->bind("tgt_out", both.tgt_out);
    whole->run();

    AdamOptions accumulating = adam;
    accumulating.update_freq = 2;
    auto first = compiler::make_executable(build_accumulate_graph(cfg, 1, 6, 6), exec);
    auto last = compiler::make_executable(build_train_graph(cfg, 1, 6, 6, accumulating), exec);
    bind_initial_values(*last, 7);
    const double total = static_cast<double>(tokens_of(both.tgt_out));
    double loss = 0;
    for (std::size_t row = 0; row < 2; ++row) {
      Executable& exe = row == 0 ? *first : *last;
      if (row == 0) {
        for (const auto& [name, type] : param_types(cfg)) exe.bind(name, last->binding(name));
        for (Value v : first->graph().declarations(ValueKind::state))
          exe.bind(first->graph().name_of(v), last->binding(first->graph().name_of(v)));
      } else {
        for (Value v : first->graph().declarations(ValueKind::state))
          last->bind(first->graph().name_of(v), first->binding(first->graph().name_of(v)));
      }
      const Tensor tgt_out = rows_of(both.tgt_out, row, row + 1);
      const double weight = static_cast<double>(tokens_of(tgt_out)) / total;
      exe.bind("src", rows_of(both.src, row, row + 1));
      exe.bind("tgt_in", rows_of(both.tgt_in, row, row + 1));
      exe.bind("tgt_out", tgt_out);
      exe.bind(kGradWeightInput, Tensor::scalar(static_cast<float>(weight)));
      exe.bind(kFirstExampleInput, Tensor(Tensor::I32(static_cast<int32_t>(row))));
      exe.run();
      loss += weight * exe.output("loss").f32()();
    }
    CHECK(loss == doctest::Approx(whole->output("loss").f32()()).epsilon(1e-5));
    CHECK(last->binding("step").i32()() == 1);
    for (const auto& [name, type] : param_types(cfg)) {
      INFO("param %", name);
      const Tensor::F32& m_whole = whole->binding(name + ".adam_m").f32();
      const Tensor::F32& m_acc = last->binding(name + ".adam_m").f32();
      const float scale = xt::amax(xt::abs(m_whole))();
      CHECK(xt::amax(xt::abs(m_acc - m_whole))() <= 1e-4f * scale + 1e-9f);
      CHECK(xt::amax(xt::abs(last->binding(name).f32() - whole->binding(name).f32()))() <= 1e-5f);
      CHECK(xt::amax(xt::abs(last->binding(name + kGradAccSuffix).f32()))() == 0.0f);  // zeroed for the next update
    }
  }
}

TEST_CASE("the trainer's --update-freq runs, logs the weighted loss and keeps its setting on resume") {
  TempDir dir;
  std::ostringstream log;
  TrainOptions o = test::interpreter_run(dir.file("ckpt"), 3, log);
  o.update_freq = 2;
  o.dropout = 0.1;
  const TrainResult r = train(o);
  CHECK(r.last_step == 3);
  CHECK(std::isfinite(r.train_losses.back().loss));
  TrainOptions resumed = test::interpreter_run(dir.file("ckpt"), 1, log);
  resumed.resume = true;
  resumed.update_freq = 4;
  CHECK_THROWS_WITH(train(resumed), doctest::Contains("--update-freq 4 on 1 rank(s) makes updates of 4 parts; the "
                                                     "checkpoint's were 2 parts of"));
  resumed.update_freq = 0;
  CHECK(train(resumed).last_step == 4);
}
