#include "ir/random_graph.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <utility>

#include "engine/ir/builder.h"
#include "engine/ir/error.h"

namespace kiln::test {

uint64_t Rng::next() {
  uint64_t z = (state_ += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int64_t Rng::uniform(int64_t lo, int64_t hi) {
  const uint64_t span = static_cast<uint64_t>(hi - lo) + 1;
  return lo + static_cast<int64_t>(next() % span);
}

bool Rng::coin(double p) { return static_cast<double>(next() >> 11) * 0x1.0p-53 < p; }

int64_t vector_dim(Rng& rng) {
  static const std::vector<int64_t> dims = {1, 1, 2, 3, 5, 7, 8, 15, 16, 17, 31, 33, 40};
  return rng.pick(dims);
}

Shape random_shape(Rng& rng, int max_rank) {
  Shape s;
  const int64_t rank = rng.uniform(0, max_rank);
  for (int64_t k = 0; k < rank; ++k) s.push_back(vector_dim(rng));
  return s;
}

Shape broadcast_partner(Rng& rng, const Shape& s) {
  Shape out(s.begin() + rng.uniform(0, static_cast<int64_t>(s.size())), s.end());
  for (int64_t& d : out)
    if (rng.coin(0.3)) d = 1;
  return out;
}

namespace {

// Values that stress float printing and parsing: binary fractions that never
// terminate, tiny, huge and subnormal magnitudes, and a zero with a sign.
const std::vector<double> kAwkwardFloats = {0.1,  1e-30,   -0.0,   0.0,    1.0,          -2.5,
                                            1e-5, 1.0 / 3, 3.4e38, 5e-324, 123456789.125};
const std::vector<double> kEpsilons = {0.1, 1e-30, 1e-12, 5e-324, 1e-3};

class Generator {
 public:
  Generator(Graph& g, uint64_t seed, const RandomGraphOptions& options) : g_(g), b_(g), rng_(seed), opt_(options) {}

  void run() {
    const int decls = static_cast<int>(rng_.uniform(1, 2));
    for (int i = 0; i < decls; ++i) declare({DType::f32, random_shape(0)});
    if (rng_.coin(0.3)) declare({DType::i32, random_shape(0)});
    const std::vector<bool (Generator::*)()> steps = {
        &Generator::unary,   &Generator::binary, &Generator::compare, &Generator::logical,   &Generator::select,
        &Generator::cast,    &Generator::reduce, &Generator::reshape, &Generator::transpose, &Generator::broadcast,
        &Generator::slice,   &Generator::concat, &Generator::matmul,  &Generator::softmax,   &Generator::layer_norm,
        &Generator::dropout, &Generator::fill,   &Generator::iota};
    for (int i = 0; i < opt_.steps; ++i) {
      bool done = false;
      for (int attempt = 0; attempt < 8 && !done; ++attempt) done = (this->*rng_.pick(steps))();
      if (!done) unary();  // always applicable
    }
    add_assigns();
    add_outputs();
  }

 private:
  // ---- shapes, names, operands ---------------------------------------------

  int64_t random_dim() { return rng_.coin(0.3) ? 1 : rng_.uniform(1, opt_.max_dim); }

  Shape random_shape(int min_rank) {
    Shape s(static_cast<size_t>(rng_.uniform(min_rank, opt_.max_rank)));
    for (int64_t& d : s) d = random_dim();
    return s;
  }

  bool fits(const Shape& s) const { return numel(s) <= opt_.max_numel; }

  bool broadcastable(const Shape& a, const Shape& b) const {
    try {
      return fits(broadcast_shapes(a, b));
    } catch (const Error&) {
      return false;
    }
  }

  // Result names: mostly Builder-numbered, sometimes a hint with '_' or '.'.
  std::string result_hint() {
    static const std::vector<std::string> hints = {"", "", "", "h", "t.1", "y_", "w.grad"};
    return rng_.pick(hints);
  }

  Value declare(const TensorType& t) {
    ValueKind kind = ValueKind::input;
    if (t.dtype == DType::f32)
      kind = rng_.pick(std::vector<ValueKind>{ValueKind::input, ValueKind::param, ValueKind::state});
    Attrs attrs;
    if (kind == ValueKind::param && rng_.coin(0.5)) {
      std::vector<std::string> inits = {"zeros", "ones", "normal"};
      if (t.rank() >= 2) inits.push_back("glorot");
      attrs.set("init", rng_.pick(inits));
      if (rng_.coin(0.3)) attrs.set("std", rng_.pick(kEpsilons));
    }
    if (kind == ValueKind::state && rng_.coin(0.3)) attrs.set("init", std::string("zeros"));
    static const std::vector<std::string> hints = {"x", "w", "in.0", "p_1", "s"};
    const Value v = g_.declare(kind, g_.fresh_name(rng_.pick(hints)), t, std::move(attrs));
    pool_.push_back(v);
    return v;
  }

  std::optional<Value> find(const std::function<bool(const TensorType&)>& ok) {
    std::vector<Value> candidates;
    for (Value v : pool_)
      if (ok(g_.type(v))) candidates.push_back(v);
    if (candidates.empty()) return std::nullopt;
    return rng_.pick(candidates);
  }

  // A value of this dtype and at least this rank, declared if none exists.
  Value need(DType t, int min_rank) {
    if (auto v = find([&](const TensorType& x) { return x.dtype == t && x.rank() >= min_rank; })) return *v;
    return declare({t, random_shape(min_rank)});
  }

  Value emit(const std::string& op, const std::vector<Value>& operands, const Attrs& attrs = {}) {
    // Model scopes on most nodes, some several and some backward, drawn from the
    // node count so the graph's random choices stay what they were.
    static const std::vector<std::vector<std::string>> scopes{
        {}, {"enc.0.ffn"}, {"dec.1.self_attn (backward)"}, {"enc.0.ffn", "optimizer"}, {"loss"}};
    b_.set_location({scopes[g_.nodes().size() % scopes.size()], {}});
    const Value r = b_.emit1(op, operands, attrs, result_hint());
    pool_.push_back(r);
    return r;
  }

  Value constant(const Shape& shape) {
    Attrs attrs{{"shape", shape}};
    const double value = rng_.pick(kAwkwardFloats);
    if (value != 0.0 || std::signbit(value) || rng_.coin(0.2)) attrs.set("value", value);
    return emit("fill", {}, attrs);
  }

  // A value of exactly this type: an existing one, a constant or a new declaration.
  Value of_type(const TensorType& t) {
    if (rng_.coin(0.5))
      if (auto v = find([&](const TensorType& x) { return x == t; })) return *v;
    if (t.dtype == DType::f32 && rng_.coin(0.3)) return constant(t.shape);
    return declare(t);
  }

  // A value of dtype t that broadcasts with shape s.
  Value partner(const Shape& s, DType t) {
    if (rng_.coin(0.5))
      if (auto v = find([&](const TensorType& x) { return x.dtype == t && broadcastable(x.shape, s); })) return *v;
    Shape shape(s.end() - rng_.uniform(0, static_cast<int64_t>(s.size())), s.end());
    for (int64_t& d : shape)
      if (rng_.coin(0.3)) d = 1;
    if (static_cast<int>(shape.size()) < opt_.max_rank && rng_.coin(0.2)) shape.insert(shape.begin(), 1);
    return of_type({t, shape});
  }

  DType numeric_dtype() {
    const bool have_i32 = find([](const TensorType& x) { return x.dtype == DType::i32; }).has_value();
    return have_i32 && rng_.coin(0.3) ? DType::i32 : DType::f32;
  }

  // An axis in [-rank, rank), written negative about half the time.
  int64_t written_axis(int64_t axis, int64_t rank) { return rng_.coin(0.4) ? axis - rank : axis; }

  // ---- steps: each emits one op (plus operands) or returns false ----------

  bool unary() {
    if (rng_.coin(0.2))
      if (auto x = find([](const TensorType& t) { return t.dtype == DType::i32; })) {
        emit("neg", {*x});
        return true;
      }
    static const std::vector<std::string> ops = {"neg", "exp", "log", "sqrt", "rsqrt", "tanh", "relu"};
    emit(rng_.pick(ops), {need(DType::f32, 0)});
    return true;
  }

  bool binary() {
    const DType t = numeric_dtype();
    static const std::vector<std::string> f32_ops = {"add", "sub", "mul", "div", "pow", "maximum", "minimum"};
    static const std::vector<std::string> i32_ops = {"add", "sub", "mul", "maximum", "minimum"};
    const Value x = need(t, 0);
    const Value y = partner(g_.type(x).shape, t);
    const std::string& op = rng_.pick(t == DType::f32 ? f32_ops : i32_ops);
    emit(op, rng_.coin() ? std::vector<Value>{x, y} : std::vector<Value>{y, x});
    return true;
  }

  bool compare() {
    static const std::vector<std::string> ops = {"equal",      "not_equal", "less",
                                                 "less_equal", "greater",   "greater_equal"};
    const DType t = numeric_dtype();
    const Value x = need(t, 0);
    emit(rng_.pick(ops), {x, partner(g_.type(x).shape, t)});
    return true;
  }

  bool logical() {
    const auto c = find([](const TensorType& t) { return t.dtype == DType::boolean; });
    if (!c) return false;
    if (rng_.coin(0.3))
      emit("logical_not", {*c});
    else
      emit(rng_.coin() ? "logical_and" : "logical_or", {*c, partner(g_.type(*c).shape, DType::boolean)});
    return true;
  }

  bool select() {
    const auto c = find([](const TensorType& t) { return t.dtype == DType::boolean; });
    if (!c) return false;
    const DType t = numeric_dtype();
    const Value a = partner(g_.type(*c).shape, t);
    const Value b = partner(broadcast_shapes(g_.type(*c).shape, g_.type(a).shape), t);
    emit("select", {*c, a, b});
    return true;
  }

  bool cast() {
    const Value x = rng_.pick(pool_);
    emit("cast", {x}, {{"dtype", rng_.pick(std::vector<DType>{DType::f32, DType::i32, DType::boolean})}});
    return true;
  }

  bool reduce() {
    static const std::vector<std::string> ops = {"sum", "mean", "max"};
    const Value x = need(DType::f32, 0);
    const int64_t rank = g_.type(x).rank();
    std::vector<int64_t> axes;
    for (int64_t a = 0; a < rank; ++a)
      if (rng_.coin()) axes.push_back(written_axis(a, rank));
    Attrs attrs;
    if (!axes.empty() || rng_.coin(0.3)) attrs.set("axes", axes);
    const bool keepdims = rng_.coin();
    if (keepdims || rng_.coin(0.3)) attrs.set("keepdims", keepdims);
    emit(rng_.pick(ops), {x}, attrs);
    return true;
  }

  bool reshape() {
    const Value x = rng_.pick(pool_);
    int64_t rest = g_.type(x).numel();
    int64_t rank = rng_.uniform(0, opt_.max_rank);
    if (rest > 1 && rank == 0) rank = 1;
    Shape shape;
    for (int64_t i = 0; i + 1 < rank; ++i) {
      std::vector<int64_t> divisors;
      for (int64_t d = 1; d <= rest; ++d)
        if (rest % d == 0) divisors.push_back(d);
      shape.push_back(rng_.pick(divisors));
      rest /= shape.back();
    }
    if (rank > 0) shape.push_back(rest);
    if (!shape.empty() && rng_.coin(0.3)) shape[static_cast<size_t>(rng_.uniform(0, rank - 1))] = -1;
    emit("reshape", {x}, {{"shape", shape}});
    return true;
  }

  bool transpose() {
    const auto x = find([](const TensorType& t) { return t.rank() >= 1; });
    if (!x) return false;
    std::vector<int64_t> perm(static_cast<size_t>(g_.type(*x).rank()));
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = static_cast<int64_t>(i);
    for (size_t i = perm.size(); i > 1; --i)
      std::swap(perm[i - 1], perm[static_cast<size_t>(rng_.uniform(0, static_cast<int64_t>(i) - 1))]);
    emit("transpose", {*x}, {{"perm", perm}});
    return true;
  }

  bool broadcast() {
    const Value x = rng_.pick(pool_);
    Shape shape = g_.type(x).shape;
    for (int64_t& d : shape)
      if (d == 1 && rng_.coin()) d = rng_.uniform(1, opt_.max_dim);
    while (static_cast<int>(shape.size()) < opt_.max_rank && rng_.coin(0.4))
      shape.insert(shape.begin(), rng_.uniform(1, opt_.max_dim));
    if (!fits(shape)) return false;
    emit("broadcast", {x}, {{"shape", shape}});
    return true;
  }

  bool slice() {
    const auto x = find([](const TensorType& t) { return t.rank() >= 1 && t.numel() > 0; });
    if (!x) return false;
    const Shape& shape = g_.type(*x).shape;
    const auto rank = static_cast<int64_t>(shape.size());
    std::vector<int64_t> axes, starts, ends;
    const int64_t must = rng_.uniform(0, rank - 1);  // at least one axis
    for (int64_t a = 0; a < rank; ++a) {
      if (a != must && rng_.coin()) continue;
      const int64_t d = shape[static_cast<size_t>(a)];
      const int64_t start = rng_.uniform(0, d - 1);
      const int64_t end = rng_.uniform(start + 1, d);
      axes.push_back(written_axis(a, rank));
      starts.push_back(rng_.coin(0.3) ? start - d : start);
      ends.push_back(end < d && rng_.coin(0.3) ? end - d : end);
    }
    emit("slice", {*x}, {{"axes", axes}, {"starts", starts}, {"ends", ends}});
    return true;
  }

  bool concat() {
    const auto x = find([](const TensorType& t) { return t.rank() >= 1; });
    if (!x) return false;
    const TensorType& t = g_.type(*x);
    const int64_t axis = rng_.uniform(0, t.rank() - 1);
    std::vector<Value> parts{*x};
    Shape total = t.shape;
    for (int64_t i = rng_.uniform(1, 2); i > 0; --i) {
      TensorType part = t;
      part.shape[static_cast<size_t>(axis)] = random_dim();
      total[static_cast<size_t>(axis)] += part.shape[static_cast<size_t>(axis)];
      parts.push_back(of_type(part));
    }
    if (!fits(total)) return false;
    if (rng_.coin()) std::swap(parts.front(), parts.back());
    emit("concat", parts, {{"axis", written_axis(axis, t.rank())}});
    return true;
  }

  bool matmul() {
    const Value a = need(DType::f32, 2);
    const Shape& as = g_.type(a).shape;
    const bool ta = rng_.coin(0.3), tb = rng_.coin(0.3);
    const int64_t k = ta ? as[as.size() - 2] : as.back();
    const int64_t n = random_dim();
    Shape bs(as.begin() + rng_.uniform(0, static_cast<int64_t>(as.size()) - 2), as.end() - 2);
    for (int64_t& d : bs)
      if (rng_.coin(0.3)) d = 1;
    bs.push_back(tb ? n : k);
    bs.push_back(tb ? k : n);
    const Value b = of_type({DType::f32, bs});
    Attrs attrs;
    if (ta || rng_.coin(0.2)) attrs.set("transpose_a", ta);
    if (tb || rng_.coin(0.2)) attrs.set("transpose_b", tb);
    emit("matmul", {a, b}, attrs);
    return true;
  }

  bool softmax() {
    const Value x = need(DType::f32, 1);
    const int64_t rank = g_.type(x).rank();
    const int64_t axis = written_axis(rng_.uniform(0, rank - 1), rank);
    Attrs attrs;
    if (axis != -1 || rng_.coin(0.3)) attrs.set("axis", axis);
    emit(rng_.coin() ? "softmax" : "log_softmax", {x}, attrs);
    return true;
  }

  bool layer_norm() {
    const Value x = need(DType::f32, 1);
    const TensorType row{DType::f32, {g_.type(x).shape.back()}};
    const Value gamma = of_type(row), beta = of_type(row);
    Attrs attrs;
    if (rng_.coin(0.6)) attrs.set("eps", rng_.pick(kEpsilons));
    pool_.push_back(b_.emit("layer_norm", {x, gamma, beta}, attrs, {result_hint()})[0]);  // y; mean and rstd unused
    return true;
  }

  bool dropout() {
    static const std::vector<double> rates = {0.1, 1e-30, -0.0, 0.0, 0.5, 0.9999999999999999};
    Attrs attrs{{"rate", rng_.pick(rates)}};
    if (rng_.coin()) attrs.set("seed", rng_.uniform(-1000, int64_t{1} << 40));
    emit("dropout", {need(DType::f32, 0), of_type({DType::i32, {}})}, attrs);
    return true;
  }

  bool fill() {
    if (rng_.coin(0.8))
      constant(random_shape(0));
    else
      emit("fill", {},
           {{"shape", random_shape(0)}, {"dtype", DType::i32}, {"value", rng_.pick(std::vector<double>{1.0, -3.0})}});
    return true;
  }

  bool iota() {
    const Shape shape = random_shape(1);
    const int64_t axis = rng_.uniform(0, static_cast<int64_t>(shape.size()) - 1);
    Attrs attrs{{"shape", shape}};
    if (axis != 0 || rng_.coin(0.3)) attrs.set("axis", axis);
    if (rng_.coin(0.3)) attrs.set("dtype", rng_.coin() ? DType::f32 : DType::i32);
    emit("iota", {}, attrs);
    return true;
  }

  // ---- the end of the graph -------------------------------------------------

  // Some params and state get a new value from a result of their type.
  void add_assigns() {
    for (Value d : g_.declarations()) {
      if (g_.value(d).kind == ValueKind::input || !rng_.coin(0.4)) continue;
      std::vector<Value> same_type;
      for (Value v : pool_)
        if (g_.value(v).kind == ValueKind::result && g_.type(v) == g_.type(d)) same_type.push_back(v);
      if (!same_type.empty()) b_.emit("assign", {d, rng_.pick(same_type)});
    }
  }

  void add_outputs() {
    std::vector<Value> outs{pool_.back()};
    for (int64_t i = rng_.uniform(0, 2); i > 0; --i) {
      const Value v = rng_.pick(pool_);
      if (std::find(outs.begin(), outs.end(), v) == outs.end()) outs.push_back(v);
    }
    for (Value v : outs) b_.output(v);
  }

  Graph& g_;
  Builder b_;
  Rng rng_;
  RandomGraphOptions opt_;
  std::vector<Value> pool_;  // every value so far, declarations included
};

}  // namespace

Graph random_graph(uint64_t seed, const RandomGraphOptions& options) {
  std::string name = "random_";
  name += std::to_string(seed);
  Graph g(name);
  Generator(g, seed, options).run();
  return g;
}

}  // namespace kiln::test
