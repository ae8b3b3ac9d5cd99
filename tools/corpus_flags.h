#pragma once
// The flags that name a user's parallel corpus and how it is prepared (the text
// task), shared by `kiln train` and `kiln prepare`.
#include <string>

#include "models/tasks/text_corpus_prep.h"

namespace CLI {
class App;
}

namespace kiln::cli {

void add_corpus_flags(CLI::App& cmd, models::TextTaskOptions& corpus, const std::string& group);

// `kiln prepare --train P --valid P [--test P] --src-lang L --tgt-lang L -o DIR`:
// prepares the corpus into DIR once (fairseq-preprocess's idea) for any number of
// `kiln train --prepared DIR` runs.
struct PrepareOptions {
  models::TextTaskOptions corpus;
  std::string output_dir;
};
CLI::App* add_prepare_command(CLI::App& app, PrepareOptions& opts);
void prepare(const PrepareOptions& opts);

}  // namespace kiln::cli
