#include "tools/cmd_export.h"
#include "tools/flag_checks.h"
#include "tools/path_checks.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <utility>
#include <vector>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/ir/printer.h"
#include "engine/ir/verifier.h"
#include "models/lm/lm.h"
#include "models/model.h"
#include "models/transformer/decoder_step.h"
#include "models/transformer/transformer.h"

namespace kiln::cli {
namespace {

models::TransformerConfig export_config(const ExportOptions& opts) {
  models::TransformerConfig cfg = models::preset_config(opts.config);
  cfg.vocab = opts.vocab;
  if (opts.dropout >= 0) cfg.dropout = opts.dropout;
  if (opts.max_len > 0) cfg.max_len = opts.max_len;
  cfg.fused_loss = !opts.unfused_loss;
  return cfg;
}

// Checks between flags, run after parsing so a violation is a flag error.
void check_flags(const CLI::App& cmd, const ExportOptions& opts) {
  const bool transformer = opts.model == "transformer";
  for (const char* flag : {"--config", "--src-len", "--tgt-len"})
    if (transformer && cmd.count(flag) == 0) throw CLI::RequiredError(flag);
  for (const char* flag : {"--context", "--layers", "--d-model", "--heads", "--d-ff", "--positions", "--norm"})
    if (transformer && cmd.count(flag) > 0)
      throw CLI::ValidationError(flag, "is a flag of --model lm (the Transformer's sizes come from --config)");
  for (const char* flag : {"--config", "--src-len", "--tgt-len", "--vocab", "--max-len", "--unfused-loss"})
    if (!transformer && cmd.count(flag) > 0) throw CLI::ValidationError(flag, "is a flag of --model transformer");
  if (!transformer) {
    models::LmConfig cfg = opts.lm;
    cfg.max_len = cfg.context;
    if (opts.dropout >= 0) cfg.dropout = opts.dropout;
    try {
      models::validate(cfg);
    } catch (const Error& e) {
      throw CLI::ValidationError("--model lm", e.what());
    }
    return;
  }
  if (opts.dropout >= 1)
    throw CLI::ValidationError("--dropout", "must be below 1, got " + std::to_string(opts.dropout));
  const int64_t max_len = export_config(opts).max_len;
  for (const auto& [flag, len] : {std::pair{"--src-len", opts.src_len}, std::pair{"--tgt-len", opts.tgt_len}})
    if (len > max_len)
      throw CLI::ValidationError(flag, std::to_string(len) + " exceeds the config's max_len " +
                                           std::to_string(max_len) + " (raise it with --max-len)");
}

}  // namespace

CLI::App* add_export_command(CLI::App& app, ExportOptions& opts) {
  auto* cmd = app.add_subcommand("export", "Write a model's training-step, loss and inference graphs as .kir files");
  cmd->add_option("--model", opts.model, "the model kind:" + models::model_kinds_help())
      ->check(CLI::IsMember(models::model_kind_names()))
      ->capture_default_str();
  cmd->add_option("--config", opts.config,
                  "the preset: tiny (d_model 128, 4 heads, d_ff 512, 2+2 layers), "
                  "small (256, 4, 1024, 3+3), base (512, 8, 2048, 6+6)")
      ->check(CLI::IsMember({"tiny", "small", "base"}));
  cmd->add_option("--batch", opts.batch, "batch size B")->check(positive(opts.batch))->required();
  cmd->add_option("--src-len", opts.src_len, "source length S")->check(positive(opts.src_len));
  cmd->add_option("--tgt-len", opts.tgt_len, "target length T")->check(positive(opts.tgt_len));
  const std::string lm = "Language model (--model lm)";
  cmd->add_option("--context", opts.lm.context, "sequence length T")->check(positive(opts.lm.context))->group(lm)->capture_default_str();
  cmd->add_option("--layers", opts.lm.layers, "blocks")->check(positive(opts.lm.layers))->group(lm)->capture_default_str();
  cmd->add_option("--d-model", opts.lm.d_model, "width")->check(positive(opts.lm.d_model))->group(lm)->capture_default_str();
  cmd->add_option("--heads", opts.lm.heads, "attention heads")->check(positive(opts.lm.heads))->group(lm)->capture_default_str();
  cmd->add_option("--d-ff", opts.lm.d_ff, "feed-forward width")->check(positive(opts.lm.d_ff))->group(lm)->capture_default_str();
  cmd->add_option("--positions", opts.lm.positions, "learned, sinusoidal or rope")
      ->check(CLI::IsMember(models::choices(models::kLmPositions)))
      ->group(lm)
      ->capture_default_str();
  cmd->add_option("--norm", opts.lm.norm, "pre or post")->check(CLI::IsMember(models::choices(models::kLmNorms)))->group(lm)->capture_default_str();
  cmd->add_option("--vocab", opts.vocab, "joint vocabulary size")
      ->check(in_range(opts.vocab, int64_t{4}, int64_t{1} << 30))
      ->capture_default_str();
  cmd->add_option("--dropout", opts.dropout, "dropout rate in [0, 1) (default: the preset's, 0.1)")
      ->check(in_range(opts.dropout, 0.0, 1.0));
  cmd->add_option("--max-len", opts.max_len, "longest sequence the positional encodings cover (default 256)")
      ->check(in_range(opts.max_len, int64_t{1}, int64_t{1} << 20));
  cmd->add_option("--warmup", opts.warmup, "Adam: warm-up steps of the learning-rate schedule")
      ->check(positive(opts.warmup))
      ->capture_default_str();
  cmd->add_option("--factor", opts.factor, "Adam: factor * d_model^-0.5 * min(step^-0.5, step * warmup^-1.5)")
      ->check(positive(opts.factor))
      ->capture_default_str();
  cmd->add_flag("--unfused-loss", opts.unfused_loss,
                "the output projection's matmul, then cross_entropy, instead of linear_cross_entropy (which never "
                "stores the [tokens, vocab] logits)");
  cmd->add_option("-o,--output", opts.output_dir, "the directory to write the .kir files into")
      ->check(dir_to_write())
      ->required();
  cmd->final_callback([cmd, &opts] { check_flags(*cmd, opts); });
  return cmd;
}

namespace {

std::vector<std::pair<std::string, Graph>> transformer_graphs(const ExportOptions& opts) {
  const models::TransformerConfig cfg = export_config(opts);
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  adam.warmup = opts.warmup;
  adam.factor = opts.factor;
  const int64_t b = opts.batch, s = opts.src_len, t = opts.tgt_len;
  std::vector<std::pair<std::string, Graph>> graphs;
  graphs.emplace_back("train_step.kir", models::build_train_graph(cfg, b, s, t, adam));
  graphs.emplace_back("loss.kir", models::build_loss_graph(cfg, b, s, t, false));
  graphs.emplace_back("encoder.kir", models::build_encoder_graph(cfg, b, s));
  graphs.emplace_back("decoder.kir", models::build_decoder_graph(cfg, b, s, t));
  graphs.emplace_back("decoder_step.kir", models::build_decoder_step_graph(cfg, b, s, t));  // caches of T positions
  return graphs;
}

std::vector<std::pair<std::string, Graph>> lm_graphs(const ExportOptions& opts) {
  models::LmConfig cfg = opts.lm;
  cfg.max_len = cfg.context;
  if (opts.dropout >= 0) cfg.dropout = opts.dropout;
  AdamOptions adam;
  adam.d_model = cfg.d_model;
  adam.warmup = opts.warmup;
  adam.factor = opts.factor;
  std::vector<std::pair<std::string, Graph>> graphs;
  graphs.emplace_back("train_step.kir", models::build_lm_train_graph(cfg, opts.batch, cfg.context, adam));
  graphs.emplace_back("loss.kir", models::build_lm_loss_graph(cfg, opts.batch, cfg.context));
  graphs.emplace_back("logits.kir", models::build_lm_logits_graph(cfg, opts.batch, cfg.context));
  graphs.emplace_back("step.kir", models::build_lm_step_graph(cfg, opts.batch, cfg.context));
  return graphs;
}

}  // namespace

void export_model(const ExportOptions& opts) {
  const std::vector<std::pair<std::string, Graph>> graphs =
      opts.model == "lm" ? lm_graphs(opts) : transformer_graphs(opts);
  std::vector<FileBytes> files;
  for (const auto& [name, g] : graphs) {
    verify(g);
    files.push_back({(std::filesystem::path(opts.output_dir) / name).string(), print_kir(g)});
  }
  std::error_code ec;
  std::filesystem::create_directories(opts.output_dir, ec);
  if (ec) throw Error("cannot create directory " + opts.output_dir + ": " + ec.message());
  write_files_atomically(files);  // all or none
}

}  // namespace kiln::cli
