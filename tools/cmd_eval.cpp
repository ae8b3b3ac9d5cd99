#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "models/train/evaluate.h"
#include "models/train/trained_model.h"
#include "tools/cli_common.h"
#include "tools/flag_checks.h"

namespace kiln::cli {

CLI::App* add_eval_command(CLI::App& app, EvalOptions& opts) {
  auto* cmd = app.add_subcommand("eval",
                                 "Decode a split with a trained model: corpus "
                                 "BLEU and exact-match accuracy");
  cmd->add_option("--checkpoint", opts.checkpoint_dir, "the checkpoint directory of `kiln train`")->required();
  cmd->add_option("--split", opts.split, "the examples to decode")
      ->check(CLI::IsMember({"dev", "test"}))
      ->capture_default_str();
  cmd->add_option("--limit", opts.limit, "decode only the split's first N sentences")->check(positive(opts.limit));
  cmd->add_option("--dump-ids", opts.dump_ids,
                  "write each sentence's source subword ids, a tab and the reference's ids to this file (one "
                  "sentence per line) instead of decoding: the input of tools/bench/torch_transformer.py translate");
  cmd->add_option("--output", opts.output_dir,
                  "also write what was scored to this directory, one sentence a line: src.txt, hyp.txt, ref.txt "
                  "(all three or none)");
  add_decoding_flags(*cmd, opts.beam, opts.length_penalty, opts.data_dir, opts.exec);
  return cmd;
}

namespace {

std::string joined(const std::vector<int32_t>& ids) {
  std::string out;
  for (int32_t id : ids) {
    if (!out.empty()) out += ' ';
    out += std::to_string(id);
  }
  return out;
}

void dump_ids(const models::Task& task, const EvalOptions& opts) {
  const auto& all = task.examples(models::parse_split(opts.split));
  const size_t count = opts.limit > 0 ? std::min(all.size(), static_cast<size_t>(opts.limit)) : all.size();
  std::ofstream out(opts.dump_ids);
  for (size_t i = 0; i < count && out; ++i) out << joined(all[i].src) << '\t' << joined(all[i].tgt) << '\n';
  if (!out.flush()) throw Error("cannot write the ids to " + opts.dump_ids);
  std::cout << "wrote the ids of " << count << " " << opts.split << " sentences to " << opts.dump_ids << '\n';
}

std::string lines(const std::vector<std::string>& texts) {
  std::string out;
  for (const std::string& t : texts) {
    out += t;
    out += '\n';
  }
  return out;
}

// src.txt, hyp.txt and ref.txt in `dir`, all three or none.
void write_scored(const std::string& dir, const std::vector<std::string>& sources, const models::DecodeScores& s) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("--output: cannot create " + dir + ": " + ec.message());
  const auto at = [&](const char* name) { return (fs::path(dir) / name).string(); };
  write_files_atomically(
      {{at("src.txt"), lines(sources)}, {at("hyp.txt"), lines(s.hypotheses)}, {at("ref.txt"), lines(s.references)}});
}

}  // namespace

void eval(const EvalOptions& opts) {
  models::TrainedModel m = models::load_trained_model(opts.checkpoint_dir, opts.data_dir, opts.exec);
  if (!opts.dump_ids.empty()) return dump_ids(*m.task, opts);
  const auto start = std::chrono::steady_clock::now();
  const models::DecodeScores s = models::evaluate_decoding(*m.task, *m.decoder, models::parse_split(opts.split),
                                                           opts.limit, {opts.beam, opts.length_penalty});
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  const auto count = static_cast<int64_t>(s.hypotheses.size());
  char exact[64], took[64];
  std::snprintf(exact, sizeof exact, "%.2f%% (%lld of %lld)", 100 * s.exact_match,
                static_cast<long long>(std::llround(s.exact_match * static_cast<double>(count))),
                static_cast<long long>(count));
  std::snprintf(took, sizeof took, "decoding took %.2f s (JIT compiles included)\n", seconds.count());
  if (!opts.output_dir.empty()) {
    std::vector<std::string> sources;
    for (const models::Example& e : m.task->examples(models::parse_split(opts.split)))
      if (static_cast<int64_t>(sources.size()) < count) sources.push_back(e.src_text);
    write_scored(opts.output_dir, sources, s);
  }
  char decoding[64];
  std::snprintf(decoding, sizeof decoding, "beam %d, length penalty %.2g", opts.beam, opts.length_penalty);
  std::cout << m.task->name() << ' ' << opts.split << ", " << count << " sentences, "
            << (opts.beam > 1 ? std::string(decoding) : std::string("greedy")) << '\n'
            << models::bleu_str(s.bleu) << '\n'
            << "BLEU signature " << models::bleu_signature() << '\n'
            << "exact match " << exact << '\n'
            << took;
  if (!opts.output_dir.empty()) std::cout << "wrote src.txt, hyp.txt and ref.txt to " << opts.output_dir << '\n';
}

}  // namespace kiln::cli
