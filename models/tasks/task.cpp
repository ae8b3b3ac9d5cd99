#include "models/tasks/task.h"

#include "engine/ir/error.h"

namespace kiln::models {

Split parse_split(const std::string& name) {
  if (name == "train") return Split::train;
  if (name == "dev") return Split::dev;
  if (name == "test") return Split::test;
  throw Error("unknown split '" + name + "' (expected train, dev or test)");
}

std::string split_name(Split split) {
  switch (split) {
    case Split::train:
      return "train";
    case Split::dev:
      return "dev";
    case Split::test:
      return "test";
  }
  return "?";
}

}  // namespace kiln::models
