#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "models/checkpoint.h"
#include "models/train/attention_maps.h"
#include "models/run/progress.h"
#include "models/train/translate_lines.h"
#include "tools/cli_common.h"
#include "tools/flag_checks.h"
#include "tools/output_file.h"
#include "tools/path_checks.h"
#include "tools/pass_flags.h"
#include "tools/same_file.h"
#include "tools/text_lines.h"

namespace kiln::cli {

void add_decoding_flags(CLI::App& cmd, models::DecodeOptions& decode, std::string& data_dir,
                        compiler::BackendOptions& exec) {
  cmd.add_option("--beam", decode.beam_size,
                 "beam size (1: greedy); translate and eval both decode with beam 4 and length penalty 0.6 by "
                 "default, as the paper evaluates, so their outputs agree")
      ->check(in_range(decode.beam_size, 1, 64))
      ->capture_default_str();
  cmd.add_option("--length-penalty", decode.length_penalty, "beam search's alpha in ((5 + len) / 6)^alpha")
      ->check(in_range(decode.length_penalty, 0.0, 10.0))
      ->capture_default_str();
  cmd.add_option("--batch-tokens", decode.batch_tokens,
                 "the most tokens a decoding batch holds: sentences x beam x (padded source + output length)")
      ->check(positive(decode.batch_tokens))
      ->capture_default_str();
  cmd.add_option("--data-dir", data_dir, "de-en: the trans-de-en dictionary")
      ->check(dir_to_read())
      ->capture_default_str();
  add_backend_flags(cmd, exec);
  add_precision_flag(&cmd, exec.pipeline.passes.precision);
}

CLI::App* add_translate_command(CLI::App& app, TranslateOptions& opts) {
  auto* cmd =
      app.add_subcommand("translate", "Translate each TEXT, or each line of a file or stdin, with a trained model "
                                      "(beam 4, length penalty 0.6, as kiln eval)");
  cmd->add_option("--checkpoint", opts.checkpoint_dir, "the checkpoint directory of `kiln train`")
      ->check(dir_to_read())
      ->required();
  auto* texts = cmd->add_option("TEXT", opts.texts, "sentences to translate (default: the lines of -i or stdin)");
  cmd->add_option("-i,--input", opts.input_path, "translate the lines of this file (default: stdin)")
      ->check(CLI::ExistingFile)
      ->excludes(texts);
  cmd->add_option("-o,--output", opts.output_path,
                  "write the translations to this file, atomically at the end (default, or -: stdout)")
      ->check(file_or_stdout_to_write());
  auto* nbest = cmd->add_option("--nbest", opts.decode.nbest,
                                "print the K best translations of each line as `i ||| translation ||| score` "
                                "(Moses' n-best format; i: the 0-based line number, score: the length-penalized "
                                "log-prob); K <= --beam; without --beam the beam is K when K is more than 4")
                    ->check(in_range(opts.decode.nbest, 1, 64));
  cmd->add_option("--buffer-lines", opts.buffer_lines,
                  "lines read, sorted by length and decoded together (interactive stdin: one)")
      ->check(positive(opts.buffer_lines))
      ->capture_default_str();
  cmd->add_option("--attention", opts.attention_dir,
                  "also write each sentence's attention weights (every layer and head: encoder self-, decoder "
                  "self- and cross-attention, of the best translation) as DIR/NNNN/*.npy, and DIR/index.html, "
                  "their heatmaps over the subword pieces")
      ->check(dir_to_write());
  add_decoding_flags(*cmd, opts.decode, opts.data_dir, opts.exec);
  cmd->callback([cmd, &opts, nbest] {
    opts.nbest_lines = nbest->count() > 0;
    if (opts.decode.nbest <= opts.decode.beam_size) return;
    // Without --beam the beam widens to keep K hypotheses (the default beam's
    // best stays the first of the K when K is at most the default).
    if (cmd->count("--beam") == 0) {
      opts.decode.beam_size = opts.decode.nbest;
      return;
    }
    const std::string k = std::to_string(opts.decode.nbest);
    throw CLI::ValidationError("--nbest", k + " is more than --beam " + std::to_string(opts.decode.beam_size) +
                                              " keeps: add --beam " + k + " (or more), or leave --beam out");
  });
  return cmd;
}

namespace {

// Where translations go (stdout, or -o at the end), and the lines that failed.
class TranslationOutput {
 public:
  explicit TranslationOutput(const TranslateOptions& opts) : opts_(opts) {}

  // The translations of the next lines, in order: one output line each, or
  // Moses' n-best lines (none for a line without a translation); errors on
  // stderr.
  void add(const std::vector<models::TranslatedLine>& lines) {
    std::ostream& out = is_stdout(opts_.output_path) ? std::cout : file_;
    for (const models::TranslatedLine& line : lines) {
      ++number_;
      if (!line.error.empty()) {
        std::cerr << "kiln: error: line " << number_ << ": " << line.error << '\n';
        failed_.push_back(number_);
      }
      if (!opts_.nbest_lines) {
        out << (line.texts.empty() ? "" : line.texts.front()) << '\n';
        continue;
      }
      for (size_t i = 0; i < line.texts.size(); ++i) {
        char score[32];
        std::snprintf(score, sizeof score, "%.6f", line.scores[i]);
        out << number_ - 1 << " ||| " << line.texts[i] << " ||| " << score << '\n';
      }
    }
    out.flush();  // stdin may be interactive
  }

  // Writes -o, then throws kiln::Error naming the lines that failed, if any.
  void finish() {
    if (!is_stdout(opts_.output_path)) {
      try {
        write_file_atomically(opts_.output_path, file_.str());
      } catch (const Error& e) {
        throw Error(std::string("-o: ") + e.what());
      }
    }
    if (failed_.empty()) return;
    std::string lines;
    for (int64_t n : failed_) lines += (lines.empty() ? "" : ", ") + std::to_string(n);
    throw Error(std::to_string(failed_.size()) + " of " + std::to_string(number_) +
                " lines were not translated (line " + lines + ")");
  }

 private:
  const TranslateOptions& opts_;
  std::ostringstream file_;  // -o's contents
  int64_t number_ = 0;       // lines so far
  std::vector<int64_t> failed_;
};

}  // namespace

void translate(const TranslateOptions& opts) {
  if (!is_stdout(opts.output_path)) {  // stdin too may be the file -o names (kiln translate -o f < f)
    std::vector<FlagPath> inputs{{"--checkpoint", models::checkpoint_file(opts.checkpoint_dir)}};
    if (opts.texts.empty())
      inputs.push_back(opts.input_path.empty() ? FlagPath{"stdin", "/dev/stdin"} : FlagPath{"-i", opts.input_path});
    check_output_is_no_input({"-o", opts.output_path}, inputs);
  }
  TranslationOutput output(opts);
  models::TrainedModel m = models::load_trained_model(opts.checkpoint_dir, opts.data_dir, opts.exec);
  // A long input shows its progress on stderr (models/run/progress.h), typed lines
  // not; live only where no translation is printed on the same terminal.
  const bool typed = opts.texts.empty() && opts.input_path.empty() && isatty(STDIN_FILENO);
  const bool prints_here = is_stdout(opts.output_path) && isatty(STDOUT_FILENO);
  models::ItemProgress progress(std::cerr, isatty(STDERR_FILENO) && !prints_here, "translated", "sentences",
                                opts.input_path.empty() ? 0 : count_lines(opts.input_path));
  models::DecodeOptions decode = opts.decode;
  if (!typed) decode.progress = [&progress](size_t n) { progress.advance(static_cast<int64_t>(n)); };
  std::vector<models::SentenceAttention> attention;
  const auto translate_buffer = [&](const std::vector<std::string>& lines) {
    const std::vector<models::TranslatedLine> translated = models::translate_lines(m, lines, decode);
    output.add(translated);
    if (opts.attention_dir.empty()) return;
    for (models::SentenceAttention& a : models::translated_attention(m, lines, translated))
      attention.push_back(std::move(a));
  };
  if (!opts.texts.empty()) {
    translate_buffer(opts.texts);
  } else {
    std::ifstream file;
    if (!opts.input_path.empty()) {
      file.open(opts.input_path, std::ios::binary);
      if (!file) throw Error("-i: cannot open " + opts.input_path);
    }
    std::istream& in = opts.input_path.empty() ? std::cin : file;
    // A person typing gets each line's translation as soon as it is typed.
    const size_t buffer = typed ? 1 : static_cast<size_t>(opts.buffer_lines);
    const std::string name = opts.input_path.empty() ? "stdin" : opts.input_path;
    std::vector<std::string> lines;
    int64_t number = 0;
    for (std::string line; read_line(in, line, name, ++number);) {
      lines.push_back(line);
      if (lines.size() == buffer) {
        translate_buffer(lines);
        lines.clear();
      }
    }
    if (!lines.empty()) translate_buffer(lines);
  }
  if (!opts.attention_dir.empty()) models::write_attention(opts.attention_dir, attention);
  output.finish();
}

}  // namespace kiln::cli
