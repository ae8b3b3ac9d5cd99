#include "engine/param_init.h"

#include <cmath>
#include <numbers>
#include <string_view>
#include <xtensor/xbuilder.hpp>

#include "engine/fnv1a.h"
#include "engine/ir/error.h"
#include "engine/ir/init_scheme.h"
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
    case DType::bf16: {
      auto a = Tensor::BF16::from_shape(shape);
      a.fill(bfloat16(1.0f));
      return Tensor(std::move(a));
    }
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

constexpr const char* kNotLoaded =
    "init \"load\": the value comes with the graph and must be bound (kiln import writes it beside the .kir; "
    "bind it with --load DIR)";

bool is_loaded(const ValueInfo& decl) {
  const Attr* init = decl.attrs.find("init");
  const auto* scheme = init ? std::get_if<std::string>(init) : nullptr;
  return scheme && *scheme == "load";
}

Tensor scheme_value(const ValueInfo& decl, const Init& init, uint64_t seed) {
  const TensorType& t = decl.type;
  checked_bytes(t);  // a declared shape may be anything
  const Draws draws(seed, decl.name);
  switch (init.scheme) {
    case InitScheme::zeros: return Tensor::zeros(t);
    case InitScheme::ones: return ones(t);
    case InitScheme::sinusoidal: return sinusoidal(t);
    case InitScheme::glorot: {
      const double fans = static_cast<double>(t.shape[t.shape.size() - 2] + t.shape.back());
      const double a = std::sqrt(6.0 / fans);
      return random_f32(t.shape, draws, [a](const philox::Counter& u) { return -a + 2 * a * unit_open_above(u[0]); });
    }
    case InitScheme::load: throw Error(kNotLoaded);
    case InitScheme::normal: break;
  }
  return random_f32(t.shape, draws, [stddev = init.stddev](const philox::Counter& u) {
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
    return scheme_value(decl, init_of(decl), seed);
  } catch (const Error& e) {
    throw Error(where + ": " + e.what());
  }
}

void bind_initial_values(Executable& exe, uint64_t seed) {
  const Graph& g = exe.graph();
  std::string unbound;  // those that must be bound, all named at once
  for (Value v : g.declarations()) {
    const ValueInfo& decl = g.value(v);
    if (decl.kind == ValueKind::input || exe.is_bound(decl.name) || !is_loaded(decl)) continue;
    unbound += (unbound.empty() ? "" : ", ") + std::string(value_kind_name(decl.kind)) + " %" + decl.name;
  }
  if (!unbound.empty()) throw Error(unbound + ": " + kNotLoaded);
  for (Value v : g.declarations()) {
    const ValueInfo& decl = g.value(v);
    if (decl.kind != ValueKind::input && !exe.is_bound(decl.name)) exe.bind(decl.name, initial_value(decl, seed));
  }
}

}  // namespace kiln
