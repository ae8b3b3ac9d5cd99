#include "models/train/evaluator.h"

#include <cstdio>

#include "models/best_checkpoints.h"
#include "models/transformer/transformer.h"

namespace kiln::models {

Evaluator::Evaluator(const Task& task, const TransformerConfig& config, const compiler::BackendOptions& exec,
                     const ExecutableCache::CompileObserver& on_compile, int64_t sentences)
    : task_(task),
      config_(config),
      exec_(exec),
      on_compile_(on_compile),
      sentences_(sentences),
      losses_(
          [cfg = config](const BatchShape& s) { return build_loss_graph(cfg, s.batch, s.src_len, s.tgt_len, false); },
          exec, on_compile) {}

DevEvaluation Evaluator::evaluate(const std::map<std::string, Tensor>& params, TrainerState& state) {
  DevEvaluation dev;
  dev.step = state.step;
  losses_.set_persistent(params);
  dev.loss = evaluate_loss(task_, losses_, Split::dev, state.batch_tokens, state.max_train_len);
  if (decoder_)
    decoder_->set_params(params);
  else
    decoder_.emplace(config_, params, exec_, on_compile_);
  dev.decoding = evaluate_decoding(task_, *decoder_, Split::dev, sentences_, {});
  state.dev_losses.push_back({state.step, dev.loss});
  state.dev_bleu.push_back({state.step, dev.decoding.bleu.score});
  state.dev_chrf.push_back({state.step, dev.decoding.chrf.score});
  const std::string& metric = state.best_metric;
  dev.score = metric == "loss" ? dev.loss : metric == "bleu" ? dev.decoding.bleu.score : dev.decoding.chrf.score;
  dev.is_best = record_best(state, dev.score);
  return dev;
}

bool record_best(TrainerState& state, double score) {
  const bool is_best = state.best_step < 0 || better(state.best_metric, score, state.best_score);
  if (is_best) {
    state.best_step = state.step;
    state.best_score = score;
    state.evals_since_best = 0;
  } else {
    ++state.evals_since_best;
  }
  return is_best;
}

std::string dev_text(const DevEvaluation& dev, double minutes) {
  char loss[32];
  std::snprintf(loss, sizeof loss, "%.4f", dev.loss);
  char when[48];
  std::snprintf(when, sizeof when, " (%.1f min)", minutes);
  char exact[32];
  std::snprintf(exact, sizeof exact, "%.1f%%", 100.0 * dev.decoding.exact_match);
  return "dev at step " + std::to_string(dev.step) + when + ": loss " + loss + ", greedy on " +
         std::to_string(dev.decoding.hypotheses.size()) + " sentences: " + bleu_str(dev.decoding.bleu) + ", " +
         chrf_str(dev.decoding.chrf) + ", exact match " + exact;
}

}  // namespace kiln::models
