#include "engine/ir/fusion_kind.h"

#include <array>
#include <utility>

#include "engine/ir/error.h"
#include "engine/ir/graph.h"

namespace kiln {
namespace {

constexpr std::array<std::pair<FusionKind, std::string_view>, 7> kNames = {{
    {FusionKind::loop, "loop"},
    {FusionKind::input, "input"},
    {FusionKind::attention, "attention"},
    {FusionKind::row, "row"},
    {FusionKind::attention_backward, "attention_backward"},
    {FusionKind::epilogue, "epilogue"},
    {FusionKind::horizontal, "horizontal"},
}};

}  // namespace

std::string_view fusion_kind_name(FusionKind kind) {
  for (const auto& [k, name] : kNames)
    if (k == kind) return name;
  throw Error("unknown fusion kind " + std::to_string(static_cast<int>(kind)));
}

std::optional<FusionKind> parse_fusion_kind(std::string_view name) {
  for (const auto& [k, n] : kNames)
    if (n == name) return k;
  return std::nullopt;
}

std::string fusion_kind_names() {
  std::string out;
  for (const auto& [k, name] : kNames) {
    if (!out.empty()) out += ", ";
    out += name;
  }
  return out;
}

FusionKind fusion_kind_of(const Node& fusion) {
  const std::string& name = fusion.attrs.get_string("kind");
  if (const std::optional<FusionKind> kind = parse_fusion_kind(name)) return *kind;
  throw Error("unknown fusion kind '" + name + "' (kinds: " + fusion_kind_names() + ")");
}

}  // namespace kiln
