#pragma once
// One field of a JSON object that a file kiln reads must have.
#include <nlohmann/json.hpp>
#include <string>

namespace kiln::models {

// j[key], or kiln::Error "ORIGIN: missing key "KEY"" (ORIGIN names the file or record).
const nlohmann::json& json_field(const nlohmann::json& j, const char* key, const std::string& origin);

}  // namespace kiln::models
