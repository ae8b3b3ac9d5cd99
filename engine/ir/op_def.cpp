#include "engine/ir/op_def.h"

#include "engine/ir/error.h"

namespace kiln {

OpRegistry& OpRegistry::global() {
  static OpRegistry registry;
  return registry;
}

void OpRegistry::add(OpDef def) {
  if (ops_.count(def.name)) throw Error("op '" + def.name + "' is registered twice");
  std::string name = def.name;
  ops_.emplace(std::move(name), std::make_unique<OpDef>(std::move(def)));
}

const OpDef* OpRegistry::find(const std::string& name) const {
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : it->second.get();
}

std::vector<const OpDef*> OpRegistry::all() const {
  std::vector<const OpDef*> out;
  for (const auto& [name, def] : ops_) out.push_back(def.get());
  return out;
}

Attrs complete_attrs(const OpDef& def, const Attrs& given) {
  for (const auto& [name, value] : given) {
    const AttrSpec* spec = nullptr;
    for (const AttrSpec& s : def.attrs)
      if (s.name == name) spec = &s;
    if (!spec) throw Error("unknown attribute '" + name + "' for op '" + def.name + "'");
    // An int literal is accepted where a float is expected (rate=1 means 1.0).
    if (spec->kind == AttrKind::real && attr_kind(value) == AttrKind::integer) continue;
    if (attr_kind(value) != spec->kind)
      throw Error("attribute '" + name + "' of op '" + def.name + "' must be " +
                  std::string(attr_kind_name(spec->kind)) + ", got " + std::string(attr_kind_name(attr_kind(value))));
  }
  Attrs out;
  for (const AttrSpec& s : def.attrs) {
    if (const Attr* a = given.find(s.name)) {
      if (s.kind == AttrKind::real && attr_kind(*a) == AttrKind::integer)
        out.set(s.name, static_cast<double>(std::get<int64_t>(*a)));
      else
        out.set(s.name, *a);
    } else if (s.default_value) {
      out.set(s.name, *s.default_value);
    } else {
      throw Error("op '" + def.name + "' requires attribute '" + s.name + "' (" +
                  std::string(attr_kind_name(s.kind)) + ")");
    }
  }
  return out;
}

bool may_fail(const Graph& g, const Node& node) {
  if (!node.def->may_fail) return false;
  std::vector<TensorType> operands;
  for (Value v : node.operands) operands.push_back(g.type(v));
  return node.def->may_fail(operands);
}

}  // namespace kiln
