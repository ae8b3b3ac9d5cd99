#include "tools/cmd_lm.h"

#include <chrono>
#include <cmath>
#include <iomanip>
#include <iostream>
#include <sstream>

#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "models/checkpoint.h"
#include "models/lm/byte_corpus.h"
#include "models/lm/generator.h"
#include "models/lm/lm_checkpoint.h"
#include "models/lm/lm_trainer.h"
#include "models/model.h"
#include "tools/flag_checks.h"
#include "tools/pass_flags.h"
#include "tools/path_checks.h"

namespace kiln::cli {
namespace {

// The train command's flags that only the Transformer reads.
const char* const kTransformerOnly[] = {
    "--task",        "--prepared",       "--config",          "--resume",         "--batch-tokens", "--max-train-len",
    "--update-freq", "--lr-factor",      "--save-every",      "--keep-snapshots", "--best-metric",  "--patience",
    "--keep-best",   "--eval-sentences", "--label-smoothing", "--unfused-loss",   "--data-dir",     "--profile",
    "--test",        "--src-lang",       "--tgt-lang",        "--vocab-size",     "--vocab",        "--spm-model",
    "--max-len",     "--max-line-bytes", "--max-ratio"};

template <class T>
void given(const CLI::App& cmd, const char* flag, const T& value, std::optional<T>& into) {
  if (cmd.count(flag) > 0) into = value;
}

}  // namespace

void add_model_flags(CLI::App& train, ModelFlags& f) {
  train.add_option("--model", f.model, "the model kind to train:" + models::model_kinds_help())
      ->check(CLI::IsMember(models::model_kind_names()))
      ->capture_default_str();
  const std::string group = "Language model (--model lm): --train and --valid are plain text files or folders";
  train.add_option("--context", f.context, "tokens (bytes) a training sequence holds (default 256)")
      ->check(in_range(f.context, 1, 1 << 20))
      ->group(group);
  train
      .add_option("--positions", f.positions,
                  "positions: learned (a trained table, as GPT-2 and BERT), sinusoidal (the paper's) or rope "
                  "(rotary, as LLaMA; the default)")
      ->check(CLI::IsMember(models::choices(models::kLmPositions)))
      ->group(group);
  train
      .add_option("--norm", f.norm,
                  "pre (GPT-2's x + f(LN(x)) and a final LN; the default) or post (the paper's LN(x + f(x)))")
      ->check(CLI::IsMember(models::choices(models::kLmNorms)))
      ->group(group);
  train
      .add_option("--positions-max", f.max_len,
                  "positions sinusoidal and rotary tables cover, for generating past the trained context "
                  "(default: 4 x --context; learned: --context)")
      ->check(in_range(f.max_len, 1, 1 << 22))
      ->group(group);
  train.add_option("--batch-size", f.batch, "sequences a step (default 32)")
      ->check(in_range(f.batch, 1, 1 << 16))
      ->group(group);
  train
      .add_option("--lr", f.lr,
                  "the peak learning rate, at the end of the warm-up, then decaying as 1/sqrt(step) "
                  "(default 1e-3)")
      ->check(in_range(f.lr, 1e-8, 1.0))
      ->group(group);
}

void train_lm(const CLI::App& cmd, const models::TrainOptions& opts, const ModelFlags& f) {
  for (const char* flag : kTransformerOnly)
    if (cmd.count(flag) > 0) throw Error(std::string(flag) + " is a Transformer flag: --model lm does not take it");
  if (opts.text.train.empty() || opts.text.valid.empty())
    throw Error("--model lm needs --train and --valid: plain text files (or folders of them)");
  models::LmTrainOptions o;
  o.train = opts.text.train;
  o.valid = opts.text.valid;
  o.checkpoint_dir = opts.checkpoint_dir;
  o.minutes = opts.minutes;
  o.steps = opts.steps;
  o.eval_minutes = opts.eval_minutes;
  o.eval_every = opts.eval_every;
  o.log_every = opts.log_every;
  o.exec = opts.exec;
  models::LmSettings& s = o.settings;
  given(cmd, "--d-model", opts.d_model, s.d_model);
  given(cmd, "--heads", opts.heads, s.heads);
  given(cmd, "--d-ff", opts.d_ff, s.d_ff);
  given(cmd, "--layers", opts.layers, s.layers);
  given(cmd, "--dropout", opts.dropout, s.dropout);
  given(cmd, "--warmup", opts.warmup, s.warmup);
  given(cmd, "--context", f.context, s.context);
  given(cmd, "--positions-max", f.max_len, s.max_len);
  given(cmd, "--positions", f.positions, s.positions);
  given(cmd, "--norm", f.norm, s.norm);
  given(cmd, "--batch-size", f.batch, s.batch);
  given(cmd, "--lr", f.lr, s.lr);
  if (opts.seed) s.seed = *opts.seed;
  const models::LmTrainResult r = models::train_lm(o);
  std::cout << "trained steps " << r.first_step << ".." << r.last_step << " (" << std::fixed << std::setprecision(1)
            << r.train_minutes << " min in all): " << static_cast<int64_t>(r.tokens_per_second) << " tokens/s";
  if (!r.dev.empty()) {
    const double loss = r.dev.back().loss;
    std::cout << std::setprecision(4) << "; dev loss " << loss << " perplexity " << std::exp(loss) << " ("
              << loss / std::log(2.0) << " bits/byte)";
  }
  std::cout << "; checkpoint in " << opts.checkpoint_dir << '\n';
}

CLI::App* add_generate_command(CLI::App& app, GenerateOptions& opts) {
  auto* cmd = app.add_subcommand("generate",
                                 "Write text with a trained language model (kiln train --model lm): the prompt and "
                                 "its continuation, streamed to stdout, one token per step over cached keys and "
                                 "values");
  cmd->add_option("--checkpoint", opts.checkpoint_dir, "the checkpoint directory of `kiln train --model lm`")
      ->check(dir_to_read())
      ->required();
  auto* prompt = cmd->add_option("PROMPT", opts.prompt,
                                 "the text to continue (words joined by spaces; default: "
                                 "a line break)");
  cmd->add_option("-i,--input", opts.prompt_file, "continue the text of this file")
      ->check(file_to_read())
      ->excludes(prompt);
  cmd->add_option("-n,--samples", opts.samples, "samples to write, one after another, separated by a line ---")
      ->check(in_range(opts.samples, 1, 100000))
      ->capture_default_str();
  cmd->add_option("--max-tokens", opts.max_tokens,
                  "tokens (bytes) to generate per sample, fewer if the model's positions run out")
      ->check(in_range(opts.max_tokens, 1, 1 << 24))
      ->capture_default_str();
  cmd->add_option("--temperature", opts.sampling.temperature,
                  "divides the log-probs before sampling; 0: greedy, the most likely token each step")
      ->check(in_range(opts.sampling.temperature, 0.0, 100.0))
      ->capture_default_str();
  cmd->add_option("--top-k", opts.sampling.top_k, "sample among the K most likely tokens only (0: all)")
      ->check(in_range(opts.sampling.top_k, 0, 1 << 20))
      ->capture_default_str();
  cmd->add_option("--top-p", opts.sampling.top_p,
                  "sample among the fewest most likely tokens whose probability reaches P (nucleus sampling)")
      ->check(in_range(opts.sampling.top_p, 1e-9, 1.0))
      ->capture_default_str();
  cmd->add_option("--seed", opts.sampling.seed, "the samples' seed: the same seed writes the same text")
      ->capture_default_str();
  add_backend_flags(*cmd, opts.exec);
  return cmd;
}

void generate(const GenerateOptions& opts) {
  const auto [ckpt, cfg] = models::load_lm_checkpoint(opts.checkpoint_dir);
  std::string prompt;
  if (!opts.prompt_file.empty()) {
    prompt = read_file(opts.prompt_file, 64 * kMiB, "a prompt");
  } else {
    for (const std::string& w : opts.prompt) prompt += (prompt.empty() ? "" : " ") + w;
  }
  const std::vector<int32_t> ids = models::byte_ids(prompt);
  const int64_t wanted = std::max<int64_t>(1, static_cast<int64_t>(ids.size())) + opts.max_tokens;
  const auto start = std::chrono::steady_clock::now();
  models::LmGenerator generator(cfg, ckpt.tensors, std::min(wanted, cfg.max_len), opts.exec);
  const auto compiled = std::chrono::steady_clock::now();
  int64_t tokens = 0;
  const auto write = [](const std::string& bytes) {
    std::cout << bytes << std::flush;
    if (!std::cout) throw Error("cannot write the generated text to standard output");
  };
  for (int64_t i = 0; i < opts.samples; ++i) {
    if (i > 0) write("\n---\n");
    write(prompt);
    models::Sampler sampler(opts.sampling, static_cast<uint64_t>(i));
    tokens += static_cast<int64_t>(ids.size()) + 1;  // the prompt's positions (a line break if none) run too
    tokens += static_cast<int64_t>(
        generator
            .generate(ids, opts.max_tokens, sampler,
                      [&](int32_t token) { write(std::string(1, static_cast<char>(static_cast<uint8_t>(token)))); })
            .size());
  }
  write("\n");
  const std::chrono::duration<double> compile = compiled - start, run = std::chrono::steady_clock::now() - compiled;
  std::cerr << std::fixed << std::setprecision(2) << "generated " << opts.samples << " sample(s): " << tokens
            << " positions in " << run.count() << " s, " << std::setprecision(0)
            << static_cast<double>(tokens) / run.count() << " tokens/s (after a compile of " << std::setprecision(2)
            << compile.count() << " s)\n";
}

}  // namespace kiln::cli
