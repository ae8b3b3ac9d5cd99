#pragma once
// Preparing a user's parallel corpus once (fairseq-preprocess's idea): read and
// clean every split (parallel_text.h), learn the subword model(s) on the train
// split or take the user's, encode everything in parallel, choose the length
// limit and bucket shapes from the data, and write the prepared directory
// (text_task.h). A later run, or a resume, with the same files and settings
// finds it and reuses it.
#include <cstdint>
#include <iosfwd>
#include <string>

#include "models/tasks/parallel_text.h"
#include "models/tasks/text_task.h"

namespace kiln::models {

struct TextTaskOptions {
  std::string train, valid, test;  // PREFIX (PREFIX.SRC + PREFIX.TGT) or a .tsv file; test optional
  std::string src_lang, tgt_lang;
  int64_t vocab_size = 8000;   // pieces of the subword model (of each, when separate)
  bool separate_vocab = false;  // one sentencepiece model per language instead of a joint one
  std::string spm_model;        // reuse this (joint) sentencepiece model instead of learning one
  int64_t max_len = 0;          // longest source or target in subwords; 0: from the data (at most 256)
  CleaningLimits limits;
};

// Throws kiln::Error naming the flag for missing or contradictory settings.
void check_text_task_options(const TextTaskOptions& opts);

// What identifies a preparation: every input file (path, size, modification time)
// and every setting that changes the result. kiln::Error naming the flag and path
// of a missing file.
std::string text_corpus_fingerprint(const TextTaskOptions& opts);

// Prepares the corpus into data_dir, unless data_dir already holds this corpus
// prepared with these settings (then it is reused), and writes into
// checkpoint_dir what translating needs: corpus.json (naming data_dir) and the
// subword model(s) (nothing when checkpoint_dir is empty). Progress and the
// cleaning summary go to `log`. kiln::Error
// for bad files (parallel_text.h), a split left empty by cleaning, or an unusable
// subword model.
TextCorpusInfo prepare_text_corpus(const TextTaskOptions& opts, const std::string& data_dir,
                                   const std::string& checkpoint_dir, std::ostream& log);

// A corpus prepared before (kiln prepare) used as it is: writes checkpoint_dir's
// copy. kiln::Error naming data_dir if it holds no prepared corpus.
TextCorpusInfo use_prepared_corpus(const std::string& data_dir, const std::string& checkpoint_dir);

}  // namespace kiln::models
