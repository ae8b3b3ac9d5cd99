#include <iostream>

#include "engine/ir/op_def.h"
#include "tools/cli_common.h"

namespace kiln::cli {
namespace {

std::string operand_count(const OpDef& def) {
  std::string s;
  if (def.max_operands < 0) {
    s = std::to_string(def.min_operands) + "+";
  } else {
    s = std::to_string(def.min_operands);
    if (def.max_operands != def.min_operands) {
      s += '-';
      s += std::to_string(def.max_operands);
    }
  }
  s += def.max_operands == 1 ? " operand" : " operands";
  return s;
}

// "{axes: int list = [], keepdims: bool = false}"; required attributes have no default.
std::string attr_schema(const OpDef& def) {
  std::string s;
  for (const AttrSpec& a : def.attrs) {
    s += s.empty() ? "{" : ", ";
    s += a.name;
    s += ": ";
    s += attr_kind_name(a.kind);
    if (a.default_value) s += " = " + attr_str(*a.default_value);
  }
  return s.empty() ? s : s + "}";
}

}  // namespace

void list_ops() {
  for (const OpDef* def : OpRegistry::global().all()) {
    std::cout << def->name << " (" << operand_count(*def) << ")";
    if (const std::string attrs = attr_schema(*def); !attrs.empty()) std::cout << ' ' << attrs;
    std::cout << "\n    " << def->summary << '\n';
  }
}

}  // namespace kiln::cli
