#include <CLI/CLI.hpp>
#include <iostream>

#include "engine/ir/error.h"
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

// The longest stdin line read: past it the input is not sentences (an endless
// /dev/zero, a binary file) and reading on would only grow memory.
constexpr size_t kMaxLineBytes = 64 * 1024;

// Reads one line of at most kMaxLineBytes (without its '\n'); false at the end of
// the input. Throws kiln::Error for a longer line.
bool read_line(std::istream& in, std::string& line, int64_t number) {
  line.clear();
  for (int c; (c = in.get()) != std::char_traits<char>::eof();) {
    if (c == '\n') return true;
    if (line.size() == kMaxLineBytes)
      throw Error("stdin: line " + std::to_string(number) + " is longer than " + std::to_string(kMaxLineBytes) +
                  " bytes; translate reads one sentence per line of text");
    line.push_back(static_cast<char>(c));
  }
  return !line.empty();
}

}  // namespace

void translate(const TranslateOptions& opts) {
  models::TrainedModel m = models::load_trained_model(opts.checkpoint_dir, opts.data_dir, opts.exec);
  std::vector<int64_t> failed;
  int64_t number = 0;
  const auto one = [&](const std::string& line) {
    ++number;
    // One output line per input line, so outputs stay aligned with inputs;
    // flushed: stdin may be interactive.
    try {
      std::cout << models::translate(m, line, {opts.beam, opts.length_penalty}) << std::endl;
    } catch (const Error& e) {
      std::cout << std::endl;
      std::cerr << "kiln: error: line " << number << ": " << e.what() << '\n';
      failed.push_back(number);
    }
  };
  if (!opts.texts.empty()) {
    for (const std::string& text : opts.texts) one(text);
  } else {
    for (std::string line; read_line(std::cin, line, number + 1);) one(line);
  }
  if (!failed.empty()) {
    std::string lines;
    for (int64_t n : failed) lines += (lines.empty() ? "" : ", ") + std::to_string(n);
    throw Error(std::to_string(failed.size()) + " of " + std::to_string(number) + " lines were not translated (line " +
                lines + ")");
  }
}

}  // namespace kiln::cli
