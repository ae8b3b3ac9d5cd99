// `kiln score --hyp H --ref R [R2 ...] [--json]`: corpus BLEU and chrF2 of any
// translation file against one or more reference files, one sentence a line, as
// sacreBLEU scores them with its defaults (models/eval/).
#include <CLI/CLI.hpp>
#include <algorithm>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "models/eval/bleu.h"
#include "models/eval/chrf.h"
#include "models/eval/utf8.h"
#include "tools/cli_common.h"
#include "tools/path_checks.h"

namespace kiln::cli {

CLI::App* add_score_command(CLI::App& app, ScoreOptions& opts) {
  auto* cmd = app.add_subcommand("score",
                                 "Score a translation file against reference files: corpus BLEU and chrF2 "
                                 "as sacreBLEU computes them");
  cmd->add_option("--hyp", opts.hyp_path, "the translations, one sentence a line (UTF-8)")
      ->check(file_to_read())
      ->required();
  cmd->add_option("--ref", opts.ref_paths,
                  "one or more reference files (--ref R1 R2 or --ref R1 --ref R2), each with one line per "
                  "translation")
      ->check(file_to_read())
      ->required();
  cmd->add_flag("--json", opts.json, "print one JSON object instead of the sacreBLEU-style lines");
  return cmd;
}

namespace {

constexpr size_t kTextFileLimit = 256 * kMiB;

// The lines of a text file as sacreBLEU reads them: split at '\n' only, a last
// line without one counted too; every line must be UTF-8. A byte-order mark at
// the start of the file is not text (models/eval/utf8.h).
std::vector<std::string> read_sentences(const std::string& path) {
  const std::string text(models::without_bom(read_file(path, kTextFileLimit, "a file to score")));
  std::vector<std::string> lines;
  for (size_t at = 0; at < text.size();) {
    const size_t end = std::min(text.find('\n', at), text.size());
    std::string line = text.substr(at, end - at);
    if (const auto bad = models::malformed_utf8_at(line))
      throw Error(path + ":" + std::to_string(lines.size() + 1) + ": not UTF-8 text (a malformed sequence at byte " +
                  std::to_string(*bad + 1) + " of the line)");
    lines.push_back(std::move(line));
    at = end + 1;
  }
  return lines;
}

void print_json(const ScoreOptions& opts, size_t sentences, const models::Bleu& bleu, const models::Chrf& chrf) {
  const size_t nrefs = opts.ref_paths.size();
  nlohmann::ordered_json j;
  j["hyp"] = opts.hyp_path;
  j["refs"] = opts.ref_paths;
  j["sentences"] = sentences;
  j["bleu"] = {{"score", bleu.score},
               {"precisions", bleu.precisions},
               {"bp", bleu.brevity_penalty},
               {"ratio", bleu.ratio},
               {"hyp_len", bleu.hyp_len},
               {"ref_len", bleu.ref_len},
               {"signature", models::bleu_signature(nrefs)}};
  j["chrf"] = {{"name", "chrF" + std::to_string(chrf.options.beta)},
               {"score", chrf.score},
               {"signature", models::chrf_signature(nrefs, chrf.options)}};
  std::cout << j.dump() << '\n';
}

}  // namespace

void score(const ScoreOptions& opts) {
  const std::vector<std::string> hyps = read_sentences(opts.hyp_path);
  models::ReferenceStreams refs;
  for (const std::string& path : opts.ref_paths) {
    refs.push_back(read_sentences(path));
    if (refs.back().size() != hyps.size())
      throw Error(opts.hyp_path + " has " + std::to_string(hyps.size()) + " lines but " + path + " has " +
                  std::to_string(refs.back().size()) + "; a reference file needs one line per translation");
  }
  if (hyps.empty()) throw Error("nothing to score: " + opts.hyp_path + " and its references are empty");

  const models::Bleu bleu = models::corpus_bleu(hyps, refs);
  const models::Chrf chrf = models::corpus_chrf(hyps, refs);
  if (opts.json) return print_json(opts, hyps.size(), bleu, chrf);
  const size_t nrefs = refs.size();
  std::cout << models::bleu_str(bleu) << '\n'
            << "BLEU signature " << models::bleu_signature(nrefs) << '\n'
            << models::chrf_str(chrf) << '\n'
            << "chrF" << chrf.options.beta << " signature " << models::chrf_signature(nrefs, chrf.options) << '\n';
}

}  // namespace kiln::cli
