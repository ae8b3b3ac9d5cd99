// The trainer's evaluator (models/train/evaluator.h): its dev loss and greedy
// decoding on a tiny model are those computed directly from the params (the
// loss graph on every dev sentence in one batch, a fresh decoder), however
// many evaluations its decoder has served; the state records each, and which
// was the best by the run's metric.
#include "models/train/evaluator.h"

#include <doctest/doctest.h>

#include "compiler/backend.h"
#include "models/transformer/transformer.h"
#include "trainer_parts_fixtures.h"

using namespace kiln;
using namespace kiln::models;
using kiln::test::copy_model;
using kiln::test::interpreter_backend;
using kiln::test::seeded_tensors;

namespace {

std::map<std::string, Tensor> model_params(uint64_t seed) {
  return seeded_tensors(build_loss_graph(copy_model(), 1, 10, 9, false), seed);
}

// The mean loss per target token of every dev example, as one batch.
double direct_dev_loss(const Task& task, const std::map<std::string, Tensor>& params) {
  const std::vector<Example>& dev = task.examples(Split::dev);
  std::vector<std::vector<int32_t>> src, tgt_in, tgt_out;
  for (const Example& e : dev) {  // copy: tgt_in is the sequence but its last token, tgt_out all but its first
    src.push_back(e.src);
    tgt_in.emplace_back(e.src.begin(), e.src.end() - 1);
    tgt_out.push_back(e.tgt);
  }
  const auto rows = static_cast<int64_t>(dev.size());
  auto exe = compiler::make_executable(build_loss_graph(copy_model(), rows, 10, 9, false), interpreter_backend());
  for (const auto& [name, t] : params) exe->bind(name, t);
  exe->bind("src", test::tokens(src));
  exe->bind("tgt_in", test::tokens(tgt_in));
  exe->bind("tgt_out", test::tokens(tgt_out));
  exe->run();
  return exe->output("loss").f32()();
}

DecodeScores direct_decoding(const Task& task, const std::map<std::string, Tensor>& params, int64_t sentences) {
  Decoder decoder(copy_model(), params, interpreter_backend());
  return evaluate_decoding(task, decoder, Split::dev, sentences, {});
}

}  // namespace

TEST_CASE("the evaluator's dev loss and decoding are those computed directly from the params") {
  CopyTaskOptions copy;
  copy.dev_size = 6;
  const std::unique_ptr<Task> task = make_copy_task(copy);
  Evaluator evaluator(*task, copy_model(), interpreter_backend(), {}, 4);
  TrainerState state;
  state.batch_tokens = 40;  // dev in two batches of 4 rows, the second 2 of them filler
  state.best_metric = "loss";
  for (const auto& [step, seed] : {std::pair<int64_t, uint64_t>{10, 1}, {20, 2}}) {
    CAPTURE(step);
    state.step = step;
    const std::map<std::string, Tensor> params = model_params(seed);
    const DevEvaluation dev = evaluator.evaluate(params, state);
    CHECK(dev.step == step);
    CHECK(dev.loss == doctest::Approx(direct_dev_loss(*task, params)).epsilon(1e-5));
    const DecodeScores direct = direct_decoding(*task, params, 4);
    CHECK(dev.decoding.hypotheses.size() == 4);
    CHECK(dev.decoding.hypotheses == direct.hypotheses);  // the second time through a reused decoder
    CHECK(dev.decoding.references == direct.references);
    CHECK(dev.decoding.bleu.score == direct.bleu.score);
    CHECK(dev.decoding.chrf.score == direct.chrf.score);
    CHECK(dev.decoding.exact_match == direct.exact_match);
    CHECK(dev.score == dev.loss);  // the metric is the loss
    CHECK(state.dev_losses.back().step == step);
    CHECK(state.dev_losses.back().loss == dev.loss);
    CHECK(state.dev_bleu.back().loss == dev.decoding.bleu.score);
    CHECK(state.dev_chrf.back().loss == dev.decoding.chrf.score);
  }
  CHECK(state.dev_losses.size() == 2);
  CHECK(state.dev_losses[0].loss != state.dev_losses[1].loss);  // two models, not one twice
  const double lower = std::min(state.dev_losses[0].loss, state.dev_losses[1].loss);
  CHECK(state.best_score == lower);
  CHECK(state.best_step == (lower == state.dev_losses[0].loss ? 10 : 20));
}

TEST_CASE("record_best keeps the best score by the run's metric and counts the evaluations since") {
  TrainerState loss;
  loss.best_metric = "loss";
  const std::vector<std::pair<double, bool>> losses = {
      {3.0, true}, {3.5, false}, {3.0, false}, {2.0, true}, {2.5, false}};
  for (size_t i = 0; i < losses.size(); ++i) {
    CAPTURE(i);
    loss.step = static_cast<int64_t>(i + 1) * 100;
    CHECK(record_best(loss, losses[i].first) == losses[i].second);
  }
  CHECK(loss.best_step == 400);
  CHECK(loss.best_score == 2.0);
  CHECK(loss.evals_since_best == 1);

  TrainerState bleu;  // higher is better; the first evaluation is the best whatever it scores
  CHECK(record_best(bleu, 0.0));
  CHECK(!record_best(bleu, 0.0));
  CHECK(bleu.evals_since_best == 1);
  bleu.step = 7;
  CHECK(record_best(bleu, 12.5));
  CHECK(bleu.best_step == 7);
  CHECK(bleu.evals_since_best == 0);
}

TEST_CASE("dev_text reads as the trainer's dev line") {
  DevEvaluation dev;
  dev.step = 300;
  dev.loss = 2.34567;
  dev.decoding.hypotheses = {"a", "b", "c", "d"};
  dev.decoding.exact_match = 0.25;
  const std::string text = dev_text(dev, 1.24);
  CHECK(text.starts_with("dev at step 300 (1.2 min): loss 2.3457, greedy on 4 sentences: BLEU = "));
  CHECK(text.find(", chrF2 = ") != std::string::npos);
  CHECK(text.ends_with(", exact match 25.0%"));
}
