#include "models/train/task_setup.h"

#include <filesystem>

#include "engine/ir/error.h"
#include "engine/ir/read_file.h"
#include "models/tasks/text_task.h"

namespace kiln::models {

std::unique_ptr<Task> make_task(const std::string& name, const std::string& checkpoint_dir,
                                const std::string& data_path, bool may_learn_subwords) {
  if (name == "copy") return make_copy_task();
  if (name == "de-en") {
    DeEnOptions o;
    o.data_path = data_path;
    o.spm_model_path = (std::filesystem::path(checkpoint_dir) / "spm.model").string();
    if (!may_learn_subwords && !std::filesystem::exists(o.spm_model_path))
      throw Error(o.spm_model_path + " does not exist: the de-en checkpoint's subword model is missing");
    return make_de_en_task(o);
  }
  if (name == kTextTask) return open_text_task(checkpoint_dir);
  throw Error("unknown task '" + name + "' (choices: copy, de-en, text)");
}

void prepare_run_corpus(const TextTaskOptions& text, const std::string& prepared_dir, const std::string& checkpoint_dir,
                        bool continued, std::ostream& log) {
  if (!continued && text.train.empty()) {
    use_prepared_corpus(prepared_dir, checkpoint_dir);
    return;
  }
  if (!continued) {
    prepare_text_corpus(text,
                        prepared_dir.empty() ? (std::filesystem::path(checkpoint_dir) / "data").string() : prepared_dir,
                        checkpoint_dir, log);
    return;
  }
  if (text.train.empty()) return;
  const std::string path = (std::filesystem::path(checkpoint_dir) / "corpus.json").string();
  const TextCorpusInfo info = text_corpus_info_from_json(read_file(path, kMiB, "corpus.json"), path);
  if (info.fingerprint != text_corpus_fingerprint(text))
    throw Error("--resume: the corpus files or their settings differ from those " + checkpoint_dir +
                " was trained on (leave out --train, --valid and the rest to continue on its prepared corpus)");
}

}  // namespace kiln::models
