#include "models/train/task_setup.h"

#include <filesystem>

#include "engine/ir/error.h"
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

}  // namespace kiln::models
