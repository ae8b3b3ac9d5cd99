// `kiln prepare` and the corpus flags it shares with `kiln train`.
#include "tools/corpus_flags.h"

#include <CLI/CLI.hpp>
#include <filesystem>
#include <iostream>

#include "engine/ir/error.h"
#include "engine/run_dir_lock.h"
#include "tools/flag_checks.h"
#include "tools/path_checks.h"

namespace kiln::cli {

void add_corpus_flags(CLI::App& cmd, models::TextTaskOptions& corpus, const std::string& group) {
  models::TextTaskOptions& t = corpus;
  cmd.add_option("--train", t.train,
                 "the train split: PREFIX for the line-aligned files PREFIX.SRC and PREFIX.TGT, or one FILE.tsv of "
                 "source<TAB>target lines")
      ->group(group);
  cmd.add_option("--valid", t.valid, "the dev split (as --train): dev loss, BLEU, chrF and early stopping")
      ->group(group);
  cmd.add_option("--test", t.test, "the test split (as --train), for `kiln eval --split test`")->group(group);
  cmd.add_option("--src-lang", t.src_lang, "the source language's file suffix, e.g. es")->group(group);
  cmd.add_option("--tgt-lang", t.tgt_lang, "the target language's file suffix, e.g. en")->group(group);
  cmd.add_option("--vocab-size", t.vocab_size, "subword pieces to learn (per model)")
      ->check(in_range(t.vocab_size, int64_t{8}, int64_t{1} << 20))
      ->capture_default_str()
      ->group(group);
  cmd.add_option_function<std::string>(
         "--vocab", [&t](const std::string& v) { t.separate_vocab = v == "separate"; },
         "joint: one sentencepiece model for both languages (default); separate: one per language")
      ->check(CLI::IsMember({"joint", "separate"}))
      ->group(group);
  cmd.add_option("--spm-model", t.spm_model, "use this sentencepiece model (joint, kiln's special ids) instead of "
                                             "learning one")
      ->check(file_to_read())
      ->group(group);
  cmd.add_option("--max-len", t.max_len,
                 "longest source or target in subwords; longer pairs are skipped (default: the data's longest, at "
                 "most 256)")
      ->check(in_range(t.max_len, int64_t{1}, int64_t{256}))
      ->group(group);
  cmd.add_option("--max-line-bytes", t.limits.max_line_bytes, "skip pairs with a longer line")
      ->check(positive(t.limits.max_line_bytes))
      ->capture_default_str()
      ->group(group);
  cmd.add_option("--max-ratio", t.limits.max_ratio, "skip pairs whose word counts differ by more than this factor")
      ->check(in_range(t.limits.max_ratio, 1.0, 1e9))
      ->capture_default_str()
      ->group(group);
}

CLI::App* add_prepare_command(CLI::App& app, PrepareOptions& opts) {
  auto* cmd = app.add_subcommand("prepare",
                                 "Prepare a parallel corpus once (subword model, ids) for `kiln train --prepared DIR`");
  add_corpus_flags(*cmd, opts.corpus, "Corpus");
  cmd->add_option("-o,--output", opts.output_dir, "the directory to prepare it in")->check(dir_to_write())->required();
  return cmd;
}

void prepare(const PrepareOptions& opts) {
  const RunDirLock lock(opts.output_dir, "--output");  // no other kiln command writes it meanwhile
  const models::TextCorpusInfo info = models::prepare_text_corpus(opts.corpus, opts.output_dir, "", std::cerr);
  std::cout << "prepared " << opts.output_dir << ": vocabulary " << info.model_vocab() << ", max length "
            << info.max_len << "; train with kiln train --prepared " << opts.output_dir << '\n';
}

}  // namespace kiln::cli
