#include "engine/param_init.h"

#include <cmath>
#include <numbers>
#include <string_view>
#include <xtensor/xbuilder.hpp>

#include "engine/fnv1a.h"
#include "engine/ir/error.h"
#include "engine/tensor/memory_check.h"
#include "engine/tensor/philox.h"

namespace kiln {
namespace {

uint32_t lo(uint64_t v) { return static_cast<uint32_t>(v); }
uint32_t hi(uint64_t v) { return static_cast<uint32_t>(v >> 32); }

// The random numbers of one declaration: element i draws one Philox block.
class Draws {
 public:
  Draws(uint64_t seed, std::string_view name) : key_{lo(seed), hi(seed)}, name_hash_(fnv1a_64(name)) {}

  philox::Counter at(uint64_t i) const {
    return philox::philox4x32_10({lo(i), hi(i), lo(name_hash_), hi(name_hash_)}, key_);
  }

 private:
  philox::Key key_;
  uint64_t name_hash_;
};

double unit_open_above(uint32_t u) { return (u >> 8) * 0x1p-24; }        // [0, 1)
double unit_open_below(uint32_t u) { return ((u >> 8) + 1) * 0x1p-24; }  // (0, 1]

template <class Element>
Tensor random_f32(const Shape& shape, const Draws& draws, Element element) {
  auto a = xt::xarray<float>::from_shape(xt_shape(shape));
  for (size_t i = 0; i < a.size(); ++i) a.flat(i) = static_cast<float>(element(draws.at(i)));
  return Tensor(std::move(a));
}

Tensor ones(const TensorType& t) {
  const auto shape = xt_shape(t.shape);
  switch (t.dtype) {
    case DType::f32:
      return Tensor(Tensor::F32(xt::ones<float>(shape)));
    case DType::i32:
      return Tensor(Tensor::I32(xt::ones<int32_t>(shape)));
    case DType::boolean:
      return Tensor(Tensor::Bool(xt::ones<bool>(shape)));
  }
  throw Error("bad dtype");
}

// PE[pos, j] for j = 2i (sin) and j = 2i + 1 (cos) of the angle pos / 10000^(2i/D).
Tensor sinusoidal(const TensorType& t) {
  if (t.dtype != DType::f32 || t.rank() != 2)
    throw Error("init \"sinusoidal\" needs f32[positions, D], the type is " + type_str(t));
  auto a = xt::xarray<float>::from_shape(xt_shape(t.shape));
  const int64_t positions = t.shape[0], d = t.shape[1];
  for (int64_t j = 0; j < d; ++j) {
    const double frequency = std::pow(10000.0, -static_cast<double>(j - j % 2) / static_cast<double>(d));
    for (int64_t pos = 0; pos < positions; ++pos) {
      const double angle = static_cast<double>(pos) * frequency;
      a(pos, j) = static_cast<float>(j % 2 == 0 ? std::sin(angle) : std::cos(angle));
    }
  }
  return Tensor(std::move(a));
}

std::string default_scheme(const ValueInfo& decl) {
  return decl.kind == ValueKind::param && decl.type.rank() >= 2 ? "glorot" : "zeros";
}

Tensor scheme_value(const ValueInfo& decl, const std::string& scheme, uint64_t seed) {
  const TensorType& t = decl.type;
  checked_bytes(t);  // a declared shape may be anything
  if (scheme == "zeros") return Tensor::zeros(t);
  if (scheme == "ones") return ones(t);
  if (scheme == "sinusoidal") return sinusoidal(t);
  if (scheme != "glorot" && scheme != "normal")
    throw Error("unknown init \"" + scheme +
                "\" (expected \"zeros\", \"ones\", \"glorot\", \"normal\" or \"sinusoidal\")");
  if (t.dtype != DType::f32) throw Error("init \"" + scheme + "\" needs f32, the type is " + type_str(t));
  const Draws draws(seed, decl.name);
  if (scheme == "glorot") {
    if (t.rank() < 2) throw Error("init \"glorot\" needs rank >= 2, the type is " + type_str(t));
    const double fans = static_cast<double>(t.shape[t.shape.size() - 2] + t.shape.back());
    const double a = std::sqrt(6.0 / fans);
    return random_f32(t.shape, draws, [a](const philox::Counter& u) { return -a + 2 * a * unit_open_above(u[0]); });
  }
  const double stddev = decl.attrs.has("std") ? decl.attrs.get_float("std") : 0.02;
  if (!(stddev >= 0 && std::isfinite(stddev))) throw Error("std must be a finite number >= 0");
  return random_f32(t.shape, draws, [stddev](const philox::Counter& u) {
    return stddev * std::sqrt(-2 * std::log(unit_open_below(u[1]))) *
           std::cos(2 * std::numbers::pi * unit_open_above(u[0]));
  });
}

}  // namespace

Tensor initial_value(const ValueInfo& decl, uint64_t seed) {
  std::string where(value_kind_name(decl.kind));
  where += " %" + decl.name;
  try {
    if (decl.kind != ValueKind::param && decl.kind != ValueKind::state)
      throw Error("only params and state have initial values");
    const std::string scheme = decl.attrs.has("init") ? decl.attrs.get_string("init") : default_scheme(decl);
    return scheme_value(decl, scheme, seed);
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
}

void bind_initial_values(Executable& exe, uint64_t seed) {
  const Graph& g = exe.graph();
  for (Value v : g.declarations()) {
    const ValueInfo& decl = g.value(v);
    if (decl.kind != ValueKind::input && !exe.is_bound(decl.name)) exe.bind(decl.name, initial_value(decl, seed));
  }
}

}  // namespace kiln
