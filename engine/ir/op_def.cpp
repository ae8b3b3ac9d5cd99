#include "engine/ir/op_def.h"

#include "engine/ir/error.h"

namespace kiln {

OpRegistry& OpRegistry::global() {
  static OpRegistry registry;
  return registry;
}

std::string_view lowering_name(Lowering lowering) {
  switch (lowering) {
    case Lowering::none: return "none";
    case Lowering::elemental: return "elemental";
    case Lowering::fuses_producers: return "fuses_producers";
    case Lowering::reads_memory: return "reads_memory";
  }
  return "?";
}

namespace {

// Why the op's traits contradict its lowering, or "".
std::string lowering_contradiction(const OpDef& d) {
  const std::string lowering = "lowering " + std::string(lowering_name(d.lowering));
  if ((d.has_body || d.side_effect || d.collective) && d.lowering != Lowering::none)
    return "a fusion, an assign or a collective has no emitter (lowering none), not " + lowering;
  // What fusion composes into loops has elemental code.
  if ((d.elementwise || d.moves_elements || d.constant) && d.lowering != Lowering::elemental)
    return "an elementwise, element-moving or constant op is elemental, not " + lowering;
  // Row fusion computes a reduction's rows from its producers' generators.
  if (d.reduction && d.lowering != Lowering::fuses_producers)
    return "a reduction reads its operand through generators (fuses_producers), not " + lowering;
  // An epilogue follows a kernel that stores its result block by block.
  if (d.takes_epilogue && d.lowering != Lowering::reads_memory)
    return "a kernel taking an epilogue reads its operands from memory (reads_memory), not " + lowering;
  if (d.constant && (d.max_operands != 0 || d.elementwise)) return "a constant has no operands and is not elementwise";
  if (d.moves_elements && d.min_operands < 1) return "an op moving elements moves operand 0's";
  return "";
}

}  // namespace

void OpRegistry::add(OpDef def) {
  if (ops_.count(def.name)) throw Error("op '" + def.name + "' is registered twice");
  if (const std::string why = lowering_contradiction(def); !why.empty())
    throw Error("op '" + def.name + "': " + why);
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
