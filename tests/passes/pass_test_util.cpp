#include "passes/pass_test_util.h"

#include <cmath>
#include <cstring>
#include <sstream>

#include "engine/interpreter.h"
#include "engine/ir/builder.h"
#include "engine/ir/op_def.h"

namespace kiln::test {

std::map<std::string, Tensor> pass_bindings(const Graph& g, Rng& rng) {
  std::map<std::string, Tensor> out;
  for (Value v : g.declarations()) {
    Tensor t = Tensor::zeros(g.type(v));
    switch (t.dtype()) {
      case DType::f32:
        for (float& x : t.f32()) {
          const double unit = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;
          const int64_t kind = rng.uniform(0, 19);
          const double magnitude = kind == 0 ? 1e3 * unit : kind == 1 ? 1e-3 * unit : 4.0 * unit;
          x = static_cast<float>(rng.coin() ? -magnitude : magnitude);
        }
        break;
      case DType::i32:
        for (int32_t& x : t.i32()) x = static_cast<int32_t>(rng.uniform(-20, 20));
        break;
      case DType::boolean:
        for (bool& x : t.b8()) x = rng.coin();
        break;
      case DType::bf16:
        for (bfloat16& x : t.bf16()) x = bfloat16(static_cast<float>(rng.uniform(-40, 40)) / 8.0f);
        break;
    }
    out.emplace(g.name_of(v), std::move(t));
  }
  return out;
}

Observed run_interpreter(const Graph& g, const std::map<std::string, Tensor>& bindings) {
  Interpreter interp(g);
  for (const auto& [name, t] : bindings) interp.bind(name, t);
  interp.run();
  Observed o;
  for (const std::string& name : interp.output_names()) o.outputs.emplace(name, interp.output(name));
  for (Value v : g.declarations())
    if (g.value(v).kind != ValueKind::input) o.persistent.emplace(g.name_of(v), interp.binding(g.name_of(v)));
  return o;
}

namespace {

std::string compare_tensor(const Tensor& e, const Tensor& a, double rel, double abs) {
  if (!(e.type() == a.type())) return "type " + type_str(a.type()) + " differs from " + type_str(e.type());
  const auto n = static_cast<size_t>(e.numel());
  const size_t size = dtype_size(e.dtype());
  const auto* eb = static_cast<const unsigned char*>(e.data());
  const auto* ab = static_cast<const unsigned char*>(a.data());
  for (size_t i = 0; i < n; ++i) {
    if (std::memcmp(eb + i * size, ab + i * size, size) == 0) continue;
    if (rel >= 0 && e.dtype() == DType::f32) {
      const float x = e.f32().data()[i], y = a.f32().data()[i];
      if (std::isnan(x) && std::isnan(y)) continue;
      if (std::isfinite(x) && std::isfinite(y) && std::fabs(double(x) - y) <= abs + rel * std::fabs(x)) continue;
    }
    std::ostringstream os;
    os.precision(9);
    os << "element " << i << " differs";
    if (e.dtype() == DType::f32) os << ": expected " << e.f32().data()[i] << ", got " << a.f32().data()[i];
    return os.str();
  }
  return "";
}

std::string compare_maps(const std::string& what, const std::map<std::string, Tensor>& e,
                         const std::map<std::string, Tensor>& a, double rel, double abs) {
  if (e.size() != a.size()) return what + " count differs";
  for (const auto& [name, t] : e) {
    const auto it = a.find(name);
    if (it == a.end()) return what + " %" + name + " is missing";
    const std::string d = compare_tensor(t, it->second, rel, abs);
    if (!d.empty()) return what + " %" + name + ": " + d;
  }
  return "";
}

}  // namespace

std::string compare_observed(const Observed& expected, const Observed& actual, double rel, double abs) {
  std::string d = compare_maps("output", expected.outputs, actual.outputs, rel, abs);
  if (d.empty()) d = compare_maps("param/state", expected.persistent, actual.persistent, rel, abs);
  return d;
}

int count_op(const Graph& g, const std::string& op) {
  int n = 0;
  for (const Node& node : g.nodes()) n += node.op() == op;
  return n;
}

namespace {

class Planter {
 public:
  Planter(Graph& g, uint64_t seed) : g_(g), b_(g), rng_(seed) {}

  void run(int patterns) {
    const Shape shape = random_shape();
    pool_.push_back(b_.input("x", {DType::f32, shape}));
    pool_.push_back(b_.param("w", {DType::f32, shape}));
    pool_.push_back(b_.input("unused", {DType::f32, {2}}));
    for (int i = 0; i < patterns; ++i) {
      plant();
      if (rng_.coin(0.5)) ordinary();
    }
    if (rng_.coin(0.5)) b_.emit("assign", {pool_[1], same_shape_value(shape)});
    b_.output(pool_[pool_.size() - 2]);
    b_.output(pool_.back());
  }

 private:
  Shape random_shape() {
    Shape s(static_cast<size_t>(rng_.uniform(1, 3)));
    for (int64_t& d : s) d = rng_.uniform(1, 4);
    return s;
  }
  Value any() { return rng_.pick(pool_); }
  const Shape shape_of(Value v) const { return g_.type(v).shape; }
  // A value of this shape from the pool (the first input has x's shape, but
  // reshapes and broadcasts make others).
  Value same_shape_value(const Shape& s) {
    std::vector<Value> c;
    for (Value v : pool_)
      if (g_.type(v).shape == s) c.push_back(v);
    return rng_.pick(c);
  }
  // A shape that broadcasts to s without widening it: a suffix with some dims 1.
  Shape narrower(const Shape& s) {
    Shape out(s.end() - rng_.uniform(0, static_cast<int64_t>(s.size())), s.end());
    for (int64_t& d : out)
      if (rng_.coin(0.4)) d = 1;
    return out;
  }
  Value fill(const Shape& s, double v) { return b_.emit1("fill", {}, {{"shape", s}, {"value", v}}); }
  void keep(Value v) { pool_.push_back(v); }

  void ordinary() {
    static const std::vector<std::string> unary = {"exp", "tanh", "relu", "neg"};
    const Value x = any();
    if (rng_.coin()) {
      keep(b_.emit1(rng_.pick(unary), {x}));
    } else {
      keep(b_.emit1("add", {x, same_shape_value(shape_of(x))}));
    }
  }

  void plant() {
    const Value x = any();
    const Shape s = shape_of(x);
    switch (rng_.uniform(0, 14)) {
      case 0:
        keep(b_.emit1("mul", {x, fill(narrower(s), 1.0)}));
        break;
      case 1:
        keep(b_.emit1("mul", {fill(narrower(s), 1.0), x}));
        break;
      case 2:
        keep(b_.emit1("div", {x, fill(narrower(s), 1.0)}));
        break;
      case 3:
        keep(b_.emit1("add", {fill(narrower(s), -0.0), x}));
        break;
      case 4:
        keep(b_.emit1("sub", {x, fill(narrower(s), 0.0)}));
        break;
      case 5:
        keep(b_.emit1("neg", {b_.emit1("neg", {x})}));
        break;
      case 6:
        keep(rng_.coin() ? b_.emit1("identity", {x}) : b_.emit1("cast", {x}, {{"dtype", DType::f32}}));
        break;
      case 7: {
        std::vector<int64_t> p(s.size());
        for (size_t i = 0; i < p.size(); ++i) p[i] = static_cast<int64_t>(i);
        std::vector<int64_t> q = p;
        std::swap(p[0], p.back());
        if (q.size() > 1 && rng_.coin()) std::swap(q[0], q[1]);
        keep(b_.emit1("transpose", {b_.emit1("transpose", {x}, {{"perm", p}})}, {{"perm", q}}));
        break;
      }
      case 8: {
        const int64_t n = numel(s);
        const Value flat = b_.emit1("reshape", {x}, {{"shape", Shape{n}}});
        keep(b_.emit1("reshape", {flat}, {{"shape", rng_.coin() ? s : Shape{1, n}}}));
        break;
      }
      case 9: {
        Shape mid = s;
        mid.insert(mid.begin(), 2);
        Shape outer = mid;
        outer.insert(outer.begin(), 3);
        keep(b_.emit1("broadcast", {b_.emit1("broadcast", {x}, {{"shape", mid}})}, {{"shape", outer}}));
        break;
      }
      case 10: {
        static const std::vector<double> factors = {0.5, 2.0, 3.0, -1.5, 0.1};
        const Value inner = b_.emit1("mul", {fill(narrower(s), rng_.pick(factors)), x});
        keep(b_.emit1("mul", {inner, fill(narrower(s), rng_.pick(factors))}));
        break;
      }
      case 11: {  // the same subexpression twice, both used
        const Value a = b_.emit1("exp", {x});
        const Value c = b_.emit1("exp", {x});
        keep(b_.emit1("add", {a, c}));
        break;
      }
      case 12:
        b_.emit1("tanh", {x});
        break;    // dead
      case 13: {  // an op of constants, used
        const Value c = b_.emit1("add", {fill(narrower(s), 2.0), fill(narrower(s), 0.25)});
        keep(b_.emit1("mul", {x, c}));
        break;
      }
      default:
        keep(b_.emit1("identity", {x}));
        break;
    }
  }

  Graph& g_;
  Builder b_;
  Rng rng_;
  std::vector<Value> pool_;
};

}  // namespace

Graph planted_graph(uint64_t seed, int patterns) {
  Graph g("planted");
  Planter(g, seed).run(patterns);
  return g;
}

}  // namespace kiln::test
