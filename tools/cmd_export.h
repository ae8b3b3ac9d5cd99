#pragma once
// `kiln export --model transformer --config NAME --batch B --src-len S --tgt-len T -o DIR`, or
// `kiln export --model lm --batch B --context T [--d-model ...] -o DIR`: writes a model's graphs as .kir
// files that kiln check, run, compile and profile accept.
#include <cstdint>
#include <string>

#include "models/lm/config.h"

namespace CLI {
class App;
}

namespace kiln::cli {

struct ExportOptions {
  std::string model = "transformer";
  std::string config;  // tiny | small | base
  int64_t batch = 0, src_len = 0, tgt_len = 0;
  int64_t vocab = 8000;
  double dropout = -1;    // < 0: the preset's
  int64_t max_len = 0;    // 0: the preset's
  int64_t warmup = 4000;  // Adam's warm-up steps
  double factor = 1.0;    // Adam's schedule factor
  bool unfused_loss = false;  // the loss as matmul then cross_entropy (TransformerConfig::fused_loss)
  models::LmConfig lm;        // --model lm: its sizes (--d-model, --heads, --d-ff, --layers, --context, ...)
  std::string output_dir;
};

// Adds the `export` subcommand and its flags to `app`, filling `opts`. Flag
// errors (including a length beyond max_len) name the flag and exit 2.
CLI::App* add_export_command(CLI::App& app, ExportOptions& opts);

// Writes DIR/train_step.kir (forward, backward, Adam), DIR/loss.kir (loss, dropout
// off), and the inference graphs: the Transformer's DIR/encoder.kir,
// DIR/decoder.kir and DIR/decoder_step.kir (its caches of T positions), the
// language model's DIR/logits.kir and DIR/step.kir (its caches of --context
// positions), creating DIR. Every graph is built and verified before the
// first file is written; each file is written atomically.
void export_model(const ExportOptions& opts);

}  // namespace kiln::cli
