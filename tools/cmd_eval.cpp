#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <iostream>

#include "models/train/evaluate.h"
#include "models/train/trained_model.h"
#include "tools/cli_common.h"

namespace kiln::cli {

CLI::App* add_eval_command(CLI::App& app, EvalOptions& opts) {
  auto* cmd = app.add_subcommand("eval",
                                 "Decode a split with a trained model: corpus "
                                 "BLEU and exact-match accuracy");
  cmd->add_option("--checkpoint", opts.checkpoint_dir, "the checkpoint directory of `kiln train`")->required();
  cmd->add_option("--split", opts.split, "the examples to decode")
      ->check(CLI::IsMember({"dev", "test"}))
      ->capture_default_str();
  cmd->add_option("--limit", opts.limit, "decode only the split's first N sentences")->check(CLI::PositiveNumber);
  add_decoding_flags(*cmd, opts.beam, opts.length_penalty, opts.data_dir, opts.exec);
  return cmd;
}

void eval(const EvalOptions& opts) {
  models::TrainedModel m = models::load_trained_model(opts.checkpoint_dir, opts.data_dir, opts.exec);
  const models::DecodeScores s = models::evaluate_decoding(*m.task, *m.decoder, models::parse_split(opts.split),
                                                           opts.limit, {opts.beam, opts.length_penalty});
  const auto count = static_cast<int64_t>(s.hypotheses.size());
  char exact[64];
  std::snprintf(exact, sizeof exact, "%.2f%% (%lld of %lld)", 100 * s.exact_match,
                static_cast<long long>(std::llround(s.exact_match * static_cast<double>(count))),
                static_cast<long long>(count));
  std::cout << m.task->name() << ' ' << opts.split << ", " << count << " sentences, "
            << (opts.beam > 1 ? "beam " + std::to_string(opts.beam) : std::string("greedy")) << '\n'
            << models::bleu_str(s.bleu) << '\n'
            << "exact match " << exact << '\n';
}

}  // namespace kiln::cli
