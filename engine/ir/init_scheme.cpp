#include "engine/ir/init_scheme.h"

#include <cmath>

#include "engine/ir/error.h"

namespace kiln {
namespace {

InitScheme scheme_named(const std::string& name) {
  if (name == "zeros") return InitScheme::zeros;
  if (name == "ones") return InitScheme::ones;
  if (name == "glorot") return InitScheme::glorot;
  if (name == "normal") return InitScheme::normal;
  if (name == "sinusoidal") return InitScheme::sinusoidal;
  if (name == "load") return InitScheme::load;
  throw Error("unknown init \"" + name +
              "\" (expected \"zeros\", \"ones\", \"glorot\", \"normal\", \"sinusoidal\" or \"load\")");
}

}  // namespace

Init init_of(const ValueInfo& decl) {
  const TensorType& t = decl.type;
  const std::string name = decl.attrs.has("init")                           ? decl.attrs.get_string("init")
                           : decl.kind == ValueKind::param && t.rank() >= 2 ? "glorot"
                                                                            : "zeros";
  Init init{scheme_named(name)};
  switch (init.scheme) {
    case InitScheme::zeros:
    case InitScheme::ones:
    case InitScheme::load: return init;
    case InitScheme::sinusoidal:
      if (t.dtype != DType::f32 || t.rank() != 2)
        throw Error("init \"sinusoidal\" needs f32[positions, D], the type is " + type_str(t));
      return init;
    case InitScheme::glorot:
    case InitScheme::normal: break;
  }
  if (t.dtype != DType::f32) throw Error("init \"" + name + "\" needs f32, the type is " + type_str(t));
  if (init.scheme == InitScheme::glorot && t.rank() < 2)
    throw Error("init \"glorot\" needs rank >= 2, the type is " + type_str(t));
  if (init.scheme == InitScheme::normal && decl.attrs.has("std")) init.stddev = decl.attrs.get_float("std");
  if (!(init.stddev >= 0 && std::isfinite(init.stddev))) throw Error("std must be a finite number >= 0");
  return init;
}

}  // namespace kiln
