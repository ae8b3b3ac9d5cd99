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

// Why `s` is not a line of UTF-8 text ("" if it is): a NUL or another control
// byte, or a malformed UTF-8 sequence, at a 1-based byte column.
std::string not_text(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::string at = " at byte " + std::to_string(i + 1);
    if (c < 0x80) {
      if (c < 0x20 && c != '\t' && c != '\r') return "control byte " + std::to_string(c) + at;
      ++i;
      continue;
    }
    const size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    bool ok = len > 0 && i + len <= s.size() && !(c >= 0xF0 && len != 4);
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (!ok) return "malformed UTF-8" + at;
    i += len;
  }
  return "";
}

// One output line per input line, so outputs stay aligned with inputs.
std::string translate_line(models::TrainedModel& m, const std::string& line, const TranslateOptions& opts) {
  if (blank(line)) throw Error("the line is empty: nothing to translate");
  if (const std::string why = not_text(line); !why.empty()) throw Error("not text: " + why);
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
