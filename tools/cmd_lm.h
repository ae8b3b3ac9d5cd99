#pragma once
// The language model's commands: `kiln train --model lm` (its flags on the
// train command, which the Transformer's share where they mean the same) and
// `kiln generate`.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

#include "compiler/backend.h"
#include "models/lm/sampler.h"
#include "models/train/trainer.h"

namespace kiln::cli {

// What `kiln train` adds for the model kinds other than the Transformer.
struct ModelFlags {
  std::string model = "transformer";
  int64_t context = 0, max_len = 0, batch = 0;
  std::string positions, norm;
  double lr = 0;
};

// Adds --model and the language model's own flags to the train command.
void add_model_flags(CLI::App& train, ModelFlags& flags);

// `kiln train --model lm --train FILE|DIR --valid FILE|DIR --checkpoint DIR (--minutes M | --steps N) ...`:
// models/lm/lm_trainer.h, from the train command's parsed flags (`train`); a
// summary line on stdout. kiln::Error naming a Transformer-only flag given.
void train_lm(const CLI::App& train, const models::TrainOptions& opts, const ModelFlags& flags);

// `kiln generate --checkpoint DIR [PROMPT...] [-n N] [--max-tokens N] [--temperature T] [--top-k K]
// [--top-p P] [--seed S]`: the prompt and its continuation, streamed to stdout as it is drawn; -n samples
// one after another (the i-th drawn from stream i of the seed), separated by a line "---".
struct GenerateOptions {
  std::string checkpoint_dir;
  std::vector<std::string> prompt;  // joined by spaces; empty: the text starts from a line break
  std::string prompt_file;
  int64_t samples = 1;
  int64_t max_tokens = 256;
  models::SamplingOptions sampling;
  compiler::BackendOptions exec;
};
CLI::App* add_generate_command(CLI::App& app, GenerateOptions& opts);
void generate(const GenerateOptions& opts);

}  // namespace kiln::cli
