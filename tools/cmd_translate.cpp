#include <CLI/CLI.hpp>
#include <algorithm>
#include <cctype>
#include <iostream>

#include "engine/ir/error.h"
#include "models/decode/decode_all.h"
#include "models/train/evaluate.h"
#include "models/train/trained_model.h"
#include "tools/cli_common.h"
#include "tools/pass_flags.h"
#include "tools/flag_checks.h"

namespace kiln::cli {

void add_decoding_flags(CLI::App& cmd, int& beam, double& length_penalty, std::string& data_dir,
                        compiler::BackendOptions& exec) {
  cmd.add_option("--beam", beam, "beam size (1: greedy)")->check(in_range(beam, 1, 64))->capture_default_str();
  cmd.add_option("--length-penalty", length_penalty, "beam search's alpha in ((5 + len) / 6)^alpha")
      ->check(in_range(length_penalty, 0.0, 10.0))
      ->capture_default_str();
  cmd.add_option("--data-dir", data_dir, "de-en: the trans-de-en dictionary")->capture_default_str();
  add_backend_flags(cmd, exec);
}

CLI::App* add_translate_command(CLI::App& app, TranslateOptions& opts) {
  auto* cmd = app.add_subcommand("translate", "Translate each TEXT, or each line of stdin, with a trained model");
  cmd->add_option("--checkpoint", opts.checkpoint_dir, "the checkpoint directory of `kiln train`")->required();
  cmd->add_option("TEXT", opts.texts, "sentences to translate (default: read stdin line by line)");
  add_decoding_flags(*cmd, opts.beam, opts.length_penalty, opts.data_dir, opts.exec);
  return cmd;
}

namespace {

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

// One output line per input line, so outputs stay aligned with inputs.
std::string translate_line(models::TrainedModel& m, const std::string& line, const TranslateOptions& opts) {
  if (blank(line)) throw Error("the line is empty: nothing to translate");
  models::Example e;
  e.src = m.task->encode(line);
  e.src_text = line;
  const auto out = models::decode_all(*m.decoder, {e.src}, {m.task->max_output_len(e)}, models::decode_tokens(*m.task),
                                      {opts.beam, opts.length_penalty});
  return m.task->decode(out.front());
}

}  // namespace

void translate(const TranslateOptions& opts) {
  models::TrainedModel m = models::load_trained_model(opts.checkpoint_dir, opts.data_dir, opts.exec);
  std::vector<int64_t> failed;
  int64_t number = 0;
  const auto one = [&](const std::string& line) {
    ++number;
    try {
      std::cout << translate_line(m, line, opts) << std::endl;  // flushed: stdin may be interactive
    } catch (const Error& e) {
      std::cout << std::endl;
      std::cerr << "kiln: error: line " << number << ": " << e.what() << '\n';
      failed.push_back(number);
    }
  };
  if (!opts.texts.empty()) {
    for (const std::string& text : opts.texts) one(text);
  } else {
    for (std::string line; std::getline(std::cin, line);) one(line);
  }
  if (!failed.empty()) {
    std::string lines;
    for (int64_t n : failed) lines += (lines.empty() ? "" : ", ") + std::to_string(n);
    throw Error(std::to_string(failed.size()) + " of " + std::to_string(number) + " lines were not translated (line " +
                lines + ")");
  }
}

}  // namespace kiln::cli
