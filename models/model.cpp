#include "models/model.h"

#include <sstream>

#include "engine/ir/error.h"
#include "models/lm/lm_kind.h"
#include "models/transformer/transformer_kind.h"

namespace kiln::models {
namespace {

// The registry: one line per model kind.
const std::vector<ModelKind>& registry() {
  static const std::vector<ModelKind> kinds{
      transformer_model_kind(),
      lm_model_kind(),
  };
  return kinds;
}

}  // namespace

const ModelKind& model_kind(const std::string& name) {
  for (const ModelKind& k : registry())
    if (k.name == name) return k;
  std::string names;
  for (const ModelKind& k : registry()) names += (names.empty() ? "" : ", ") + k.name;
  throw Error("unknown model kind '" + name + "' (kinds: " + names + ")");
}

std::vector<std::string> model_kind_names() {
  std::vector<std::string> names;
  for (const ModelKind& k : registry()) names.push_back(k.name);
  return names;
}

std::string model_kinds_help() {
  std::ostringstream s;
  for (const ModelKind& k : registry()) s << "\n  " << k.name << ": " << k.summary;
  return s.str();
}

}  // namespace kiln::models
