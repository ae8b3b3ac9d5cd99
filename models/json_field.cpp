#include "models/json_field.h"

#include "engine/ir/error.h"

namespace kiln::models {

const nlohmann::json& json_field(const nlohmann::json& j, const char* key, const std::string& origin) {
  const auto it = j.find(key);
  if (it == j.end()) throw Error(origin + ": missing key \"" + key + "\"");
  return *it;
}

}  // namespace kiln::models
