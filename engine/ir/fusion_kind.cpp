#include "engine/ir/fusion_kind.h"

#include <array>
#include <utility>

#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln {
namespace {

constexpr std::array<std::pair<FusionKind, std::string_view>, 5> kNames = {{
    {FusionKind::loop, "loop"},
    {FusionKind::input, "input"},
    {FusionKind::row, "row"},
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

FusionRoles fusion_roles(const Attrs& attrs) {
  FusionRoles roles;
  const std::string& kind = attrs.get_string("kind");
  const std::optional<FusionKind> parsed = parse_fusion_kind(kind);
  if (!parsed) throw Error("unknown fusion kind '" + kind + "' (kinds: " + fusion_kind_names() + ")");
  roles.kind = *parsed;
  roles.hero = attrs.get_int("hero");
  roles.reductions = attrs.get_ints("reductions");
  roles.column_sum = attrs.get_int("column_sum");
  roles.stores_product = attrs.get_bool("stores_product");
  return roles;
}

FusionRoles fusion_roles_of(const Node& fusion) { return fusion_roles(fusion.attrs); }

Attrs fusion_attrs(const FusionRoles& roles) {
  Attrs attrs{{"kind", std::string(fusion_kind_name(roles.kind))}};
  if (roles.hero >= 0) attrs.set("hero", roles.hero);
  if (!roles.reductions.empty()) attrs.set("reductions", roles.reductions);
  if (roles.column_sum >= 0) attrs.set("column_sum", roles.column_sum);
  if (roles.stores_product) attrs.set("stores_product", true);
  return attrs;
}

bool is_row_reduction_of(const Graph& g, const Node& n, const Shape& shape) {
  if (!n.def->reduction) return false;
  const TensorType& in = g.type(n.operands[0]);
  if (in.dtype != DType::f32 || !(in.shape == shape) || shape.empty() || shape.back() == 0) return false;
  if (!n.attrs.get_bool("keepdims")) return false;
  const std::vector<int64_t>& axes = n.attrs.get_ints("axes");
  const auto rank = static_cast<int64_t>(shape.size());
  return axes.size() == 1 && normalize_axis(axes[0], rank) == rank - 1;
}

bool is_column_sum_of_b(const Graph& g, const Node& n, const Node& gemm) {
  if (n.op() != "sum" || gemm.op() != "matmul" || gemm.attrs.get_bool("transpose_b")) return false;
  const TensorType& b = g.type(gemm.operands[1]);
  if (n.operands[0] != gemm.operands[1] || b.dtype != DType::f32 || b.shape.size() != 2 ||
      g.type(gemm.operands[0]).shape.size() != 2)
    return false;
  const std::vector<int64_t>& axes = n.attrs.get_ints("axes");
  return axes.size() == 1 && normalize_axis(axes[0], 2) == 0;
}

bool is_bf16_cast(const Graph& g, const Node& n) {
  return n.op() == "cast" && g.type(n.results[0]).dtype == DType::bf16 && g.type(n.operands[0]).dtype == DType::f32;
}

bool is_bf16_cast_of_declaration(const Graph& g, const Node& n) {
  return is_bf16_cast(g, n) && g.value(n.operands[0]).kind != ValueKind::result;
}

}  // namespace kiln
