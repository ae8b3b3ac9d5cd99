#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "models/train/evaluate.h"
#include "models/run/progress.h"
#include "models/train/trained_model.h"
#include "models/checkpoint.h"
#include "models/lm/lm_checkpoint.h"
#include "models/lm/lm_eval.h"
#include "tools/output_file.h"
#include "models/train/translate_lines.h"
#include "tools/cli_common.h"
#include "tools/flag_checks.h"
#include "tools/path_checks.h"
#include "tools/same_file.h"
#include "tools/text_lines.h"

namespace kiln::cli {

CLI::App* add_eval_command(CLI::App& app, EvalOptions& opts) {
  auto* cmd = app.add_subcommand("eval",
                                 "Decode a split, or a source file against reference files, with a trained model: "
                                 "corpus BLEU, chrF2 and exact-match accuracy");
  cmd->add_option("--checkpoint", opts.checkpoint_dir, "the checkpoint directory of `kiln train`")
      ->check(dir_to_read())
      ->required();
  auto* split = cmd->add_option("--split", opts.split, "the examples to decode")
                    ->check(CLI::IsMember({"dev", "test"}))
                    ->capture_default_str();
  auto* src = cmd->add_option("--src", opts.src_path, "decode this file's lines instead of a split (needs --ref)")
                  ->check(CLI::ExistingFile)
                  ->excludes(split);
  auto* ref = cmd->add_option("--ref", opts.ref_paths,
                              "--src's reference translations, one line per source line; several files (or --ref "
                              "given again) for several references")
                  ->check(CLI::ExistingFile)
                  ->needs(src);
  src->needs(ref);
  cmd->add_option("--limit", opts.limit, "decode only the first N sentences")->check(positive(opts.limit));
  cmd->add_option("--dump-ids", opts.dump_ids,
                  "write each sentence's source subword ids, a tab and the reference's ids to this file (one "
                  "sentence per line) instead of decoding: the input of tools/bench/torch_transformer.py translate")
      ->check(file_to_write())
      ->excludes(src);
  cmd->add_option("--output", opts.output_dir,
                  "also write what was scored to this directory, one sentence a line: src.txt, hyp.txt, ref.txt "
                  "(and ref2.txt... for more references; all or none)")
      ->check(dir_to_write());
  auto* text = cmd->add_option("--text", opts.text_path,
                  "a language model's checkpoint (kiln train --model lm): the loss, perplexity and bits per byte of "
                  "this text file or folder, every window of the model's context")
      ->check(CLI::ExistingPath)
      ->excludes(src)
      ->excludes(split);
  cmd->add_option("--context", opts.context,
                  "with --text: windows of this many tokens instead of the trained context (rotary and sinusoidal "
                  "positions reach past it, to the model's positions; learned ones do not)")
      ->check(positive(opts.context))
      ->needs(text);
  add_decoding_flags(*cmd, opts.decode, opts.data_dir, opts.exec);
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
  std::string text;
  for (size_t i = 0; i < count; ++i) text += joined(all[i].src) + '\t' + joined(all[i].tgt) + '\n';
  write_file_atomically(opts.dump_ids, text);
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

// What eval decoded and scored.
struct Scored {
  std::string name;                  // the split, or the --src file
  std::vector<std::string> sources;  // the source texts
  models::ReferenceStreams refs;     // one stream per reference
  models::DecodeScores scores;
};

// The decoding options with a progress line on stderr over `total` sentences.
models::DecodeOptions with_progress(const models::DecodeOptions& decode, models::ItemProgress& progress) {
  models::DecodeOptions out = decode;
  out.progress = [&progress](size_t sentences) { progress.advance(static_cast<int64_t>(sentences)); };
  return out;
}

Scored decode_split(models::TrainedModel& m, const EvalOptions& opts) {
  const models::Split split = models::parse_split(opts.split);
  const auto examples = static_cast<int64_t>(m.task->examples(split).size());
  models::ItemProgress progress(std::cerr, isatty(STDERR_FILENO), "decoded", "sentences",
                                opts.limit > 0 ? std::min(opts.limit, examples) : examples);
  Scored out{opts.split, {}, {},
             models::evaluate_decoding(*m.task, *m.decoder, split, opts.limit, with_progress(opts.decode, progress))};
  for (const models::Example& e : m.task->examples(split))
    if (out.sources.size() < out.scores.hypotheses.size()) out.sources.push_back(e.src_text);
  out.refs = {out.scores.references};
  return out;
}

// --src's lines translated in batches (models/train/translate_lines.h), scored
// against the --ref files; a line that cannot be translated is an error naming
// it (a blank one scores as an empty translation).
Scored decode_files(models::TrainedModel& m, const EvalOptions& opts) {
  Scored out{opts.src_path, read_lines(opts.src_path, "--src"), {}, {}};
  for (const std::string& path : opts.ref_paths) {
    out.refs.push_back(read_lines(path, "--ref"));
    if (out.refs.back().size() != out.sources.size())
      throw Error("--ref: " + path + " has " + std::to_string(out.refs.back().size()) + " lines, --src " +
                  opts.src_path + " has " + std::to_string(out.sources.size()));
  }
  if (opts.limit > 0 && static_cast<size_t>(opts.limit) < out.sources.size()) {
    out.sources.resize(static_cast<size_t>(opts.limit));
    for (auto& stream : out.refs) stream.resize(out.sources.size());
  }
  if (out.sources.empty()) throw Error("--src: " + opts.src_path + " has no lines to decode");
  models::ItemProgress progress(std::cerr, isatty(STDERR_FILENO), "decoded", "sentences",
                                static_cast<int64_t>(out.sources.size()));
  out.scores = models::score_lines(m, out.sources, out.refs, with_progress(opts.decode, progress), opts.src_path);
  return out;
}

// src.txt, hyp.txt and ref.txt (ref2.txt... for more references) in `dir`, all or none.
void write_scored(const std::string& dir, const Scored& scored) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) throw Error("--output: cannot create " + dir + ": " + ec.message());
  const auto at = [&](const std::string& name) { return (fs::path(dir) / name).string(); };
  std::vector<FileBytes> files{{at("src.txt"), lines(scored.sources)},
                               {at("hyp.txt"), lines(scored.scores.hypotheses)}};
  for (size_t k = 0; k < scored.refs.size(); ++k)
    files.push_back({at(k == 0 ? "ref.txt" : "ref" + std::to_string(k + 1) + ".txt"), lines(scored.refs[k])});
  write_files_atomically(files);
}

// The files --output gets are none of those --src and --ref read.
void check_output_apart(const EvalOptions& opts) {
  if (opts.output_dir.empty()) return;
  std::vector<FlagPath> inputs;
  if (!opts.src_path.empty()) inputs.push_back({"--src", opts.src_path});
  for (const std::string& ref : opts.ref_paths) inputs.push_back({"--ref", ref});
  const auto in_output = [&](const std::string& name) {
    return (std::filesystem::path(opts.output_dir) / name).string();
  };
  std::vector<std::string> names{"src.txt", "hyp.txt"};
  for (size_t k = 0; k < std::max<size_t>(opts.ref_paths.size(), 1); ++k)
    names.push_back(k == 0 ? "ref.txt" : "ref" + std::to_string(k + 1) + ".txt");
  for (const std::string& name : names) check_output_is_no_input({"--output's", in_output(name)}, inputs);
}

// kiln eval --text: a language model's loss on a text.
void eval_lm(const EvalOptions& opts) {
  auto [ckpt, cfg] = models::load_lm_checkpoint(opts.checkpoint_dir);
  if (opts.context > cfg.max_len)
    throw Error("--context " + std::to_string(opts.context) + ": the model places at most " +
                std::to_string(cfg.max_len) + " positions" +
                (cfg.positions == "learned" ? " (learned positions: its trained context)" : ""));
  if (opts.context > 0) cfg.context = opts.context;
  const models::ByteCorpus text = models::read_byte_corpus(opts.text_path, cfg.context + 1);
  const models::LmTextScore s = models::score_text(cfg, ckpt.tensors, text, 32, opts.exec);
  std::ostringstream line;
  line << "loss " << s.loss << " nats/byte  perplexity " << std::exp(s.loss) << "  " << s.loss / std::log(2.0)
       << " bits/byte  (" << s.windows << " windows of " << cfg.context << " bytes of " << opts.text_path << ")\n";
  write_output("-", line.str());
}

}  // namespace

void eval(const EvalOptions& opts) {
  if (!opts.text_path.empty()) return eval_lm(opts);
  check_output_apart(opts);
  models::TrainedModel m = models::load_trained_model(opts.checkpoint_dir, opts.data_dir, opts.exec);
  if (!opts.dump_ids.empty()) return dump_ids(*m.task, opts);
  const auto start = std::chrono::steady_clock::now();
  const Scored scored = opts.src_path.empty() ? decode_split(m, opts) : decode_files(m, opts);
  const std::chrono::duration<double> seconds = std::chrono::steady_clock::now() - start;
  const models::DecodeScores& s = scored.scores;
  const auto count = static_cast<int64_t>(s.hypotheses.size());
  char exact[64], took[64];
  std::snprintf(exact, sizeof exact, "%.2f%% (%lld of %lld)", 100 * s.exact_match,
                static_cast<long long>(std::llround(s.exact_match * static_cast<double>(count))),
                static_cast<long long>(count));
  std::snprintf(took, sizeof took, "decoding took %.2f s (JIT compiles included)\n", seconds.count());
  if (!opts.output_dir.empty()) write_scored(opts.output_dir, scored);
  char decoding[64];
  std::snprintf(decoding, sizeof decoding, "beam %d, length penalty %.2g", opts.decode.beam_size,
                opts.decode.length_penalty);
  std::cout << m.task->name() << ' ' << scored.name << ", " << count << " sentences, "
            << (opts.decode.beam_size > 1 ? std::string(decoding) : std::string("greedy")) << '\n'
            << models::bleu_str(s.bleu) << '\n'
            << "BLEU signature " << models::bleu_signature(scored.refs.size()) << '\n'
            << models::chrf_str(s.chrf) << '\n'
            << "chrF2 signature " << models::chrf_signature(scored.refs.size()) << '\n'
            << "exact match " << exact << '\n'
            << took;
  if (!opts.output_dir.empty()) std::cout << "wrote what was scored to " << opts.output_dir << '\n';
}

}  // namespace kiln::cli
