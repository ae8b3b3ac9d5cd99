#include "ir/fusion_graph.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <numeric>
#include <optional>
#include <string>
#include <utility>

#include "engine/autodiff.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "ops/attention.h"
#include "ops/constant.h"
#include "ops/elementwise.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/normalization.h"
#include "ops/reduction.h"
#include "ops/shape_ops.h"

namespace kiln::test {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

Shape concat_shapes(Shape head, const Shape& tail) {
  head.insert(head.end(), tail.begin(), tail.end());
  return head;
}

class FusionGenerator {
 public:
  FusionGenerator(Graph& g, uint64_t seed, const FusionGraphOptions& options)
      : g_(g), b_(g), rng_(seed), opt_(options) {}

  void run() {
    // Attention and the reductions and normalizations around it are what most
    // fusion rules are about: they come up most often.
    const std::vector<void (FusionGenerator::*)()> motifs = {
        &FusionGenerator::attention,       &FusionGenerator::attention,       &FusionGenerator::reduction,
        &FusionGenerator::reduction,       &FusionGenerator::normalization,   &FusionGenerator::normalization,
        &FusionGenerator::matmul_epilogue, &FusionGenerator::matmul_epilogue, &FusionGenerator::reshape_or_transpose,
        &FusionGenerator::integer_chain,   &FusionGenerator::linear};
    for (int i = 0; i < opt_.motifs; ++i) (this->*rng_.pick(motifs))();
    if (rng_.coin(opt_.joint)) backward();
    state_updates();
    outputs();
  }

 private:
  // ---- values ---------------------------------------------------------------

  bool fits(const Shape& s) const { return numel(s) <= opt_.max_numel; }

  Value keep(Value v) {
    if (g_.type(v).dtype == DType::f32) pool_.push_back(v);
    return v;
  }

  // A declaration: f32 ones are inputs, params or state; i32 ones inputs.
  Value declare(const TensorType& t) {
    ValueKind kind = ValueKind::input;
    if (t.dtype == DType::f32) {
      const int64_t k = rng_.uniform(0, 19);
      kind = k < 9 ? ValueKind::input : k < 17 ? ValueKind::param : ValueKind::state;
    }
    static const std::vector<std::string> hints = {"x", "w", "p"};
    const std::string hint = t.dtype == DType::i32 ? "i" : rng_.pick(hints);
    return keep(g_.declare(kind, g_.fresh_name(hint), t));
  }

  std::optional<Value> existing(const std::function<bool(const TensorType&)>& ok) {
    std::vector<Value> candidates;
    for (Value v : pool_)
      if (ok(g_.type(v))) candidates.push_back(v);
    if (candidates.empty()) return std::nullopt;
    return rng_.pick(candidates);
  }

  Shape shape_of_rank(int64_t lo, int64_t hi) {
    for (;;) {
      Shape s(static_cast<size_t>(rng_.uniform(lo, hi)));
      for (int64_t& d : s) d = vector_dim(rng_);
      if (fits(s)) return s;
    }
  }

  // An f32 value of rank in [lo, hi]: often one that exists (a shared producer).
  Value f32_value(int64_t lo, int64_t hi) {
    if (rng_.coin(0.6))
      if (auto v = existing([&](const TensorType& t) { return t.rank() >= lo && t.rank() <= hi; })) return *v;
    return declare({DType::f32, shape_of_rank(lo, hi)});
  }

  // An f32 value of exactly this shape.
  Value of_shape(const Shape& s) {
    if (rng_.coin(0.4))
      if (auto v = existing([&](const TensorType& t) { return t.shape == s; })) return *v;
    return declare({DType::f32, s});
  }

  Value scalar(double value) { return ops::fill(b_, {}, value); }

  // An f32 value that broadcasts to `s` (and not beyond it).
  Value partner(const Shape& s) {
    const int64_t k = rng_.uniform(0, 9);
    if (k < 3)
      if (auto v = existing([&](const TensorType& t) {
            try {
              return broadcast_shapes(t.shape, s) == s;
            } catch (const Error&) {
              return false;
            }
          }))
        return *v;
    if (k < 5) return scalar(rng_.pick(std::vector<double>{0.5, -2.0, 0.125, 3.0, 1e-3}));
    return declare({DType::f32, broadcast_partner(rng_, s)});
  }

  // ---- elementwise producers and consumers ---------------------------------

  // One elementwise op on x (and partners that broadcast to it); keeps x's shape.
  // Bounded ops (tanh before exp, a positive divisor) keep values finite.
  Value elementwise(Value x) {
    const Shape s = g_.type(x).shape;
    switch (rng_.uniform(0, 9)) {
      case 0: return ops::neg(b_, x);
      case 1: return ops::tanh(b_, x);
      case 2: return ops::relu(b_, x);
      case 3: return ops::exp(b_, ops::tanh(b_, x));
      // x used twice in one fusion, but bounded: x * x in a chain squares the
      // magnitudes, and a backward pass through attention then sums terms far
      // larger than its results (f32 cancellation, not a compiler error).
      case 4: return ops::mul(b_, x, ops::tanh(b_, x));
      case 5: {
        const Value d = partner(s);
        return ops::div(b_, x, ops::add(b_, ops::mul(b_, d, d), scalar(1.0)));
      }
      case 6: return ops::select(b_, ops::greater(b_, x, partner(s)), x, partner(s));
      default: {
        const Value p = partner(s);
        const std::vector<Value (*)(Builder&, Value, Value)> binary = {ops::add, ops::sub, ops::mul, ops::maximum,
                                                                       ops::minimum};
        const auto op = rng_.pick(binary);
        return rng_.coin() ? op(b_, x, p) : op(b_, p, x);
      }
    }
  }

  Value chain(Value x, int64_t max_len) {
    for (int64_t i = rng_.uniform(0, max_len); i > 0; --i) x = elementwise(x);
    return x;
  }

  // ---- motifs ---------------------------------------------------------------

  // Attention's mask over [T, S], added to the scores: a causal mask, a padding
  // mask over keys, or a mask per (row, key); one row may be masked entirely (a
  // query with nothing to attend to).
  Value mask(const Shape& batch, int64_t t, int64_t s) {
    const int64_t kind = rng_.uniform(0, 3);
    if (kind == 0 && t == s) return ops::causal_mask(b_, t);
    const Value neg_inf = scalar(-kInf), zero = scalar(0.0);
    Value keep_mask;
    if (kind == 1) {  // padding: a key index per batch, i32 values against a threshold
      Shape shape = batch.empty() ? Shape{} : Shape{batch.front()};
      shape.resize(batch.size(), 1);
      const Value keys = declare({DType::i32, concat_shapes(shape, {1, s})});
      keep_mask = ops::select(b_, ops::less(b_, keys, ops::fill(b_, {}, 12, DType::i32)), zero, neg_inf);
    } else {
      const Value x = declare({DType::f32, {t, s}});
      keep_mask = ops::select(b_, ops::greater(b_, x, scalar(-2.0)), zero, neg_inf);
    }
    if (kind > 1 && rng_.coin(0.4)) {
      const Value rows = ops::iota(b_, g_.type(keep_mask).shape, g_.type(keep_mask).rank() - 2);
      const Value row = ops::fill(b_, {}, static_cast<double>(rng_.uniform(0, t - 1)), DType::i32);
      keep_mask = ops::select(b_, ops::equal(b_, rows, row), neg_inf, keep_mask);
    }
    return keep_mask;
  }

  void attention() {
    Shape batch;
    for (int64_t i = rng_.uniform(0, 2); i > 0; --i) batch.push_back(rng_.uniform(1, 3));
    static const std::vector<int64_t> lengths = {1, 3, 5, 8, 16, 17, 33};
    const int64_t t = rng_.pick(lengths), s = rng_.coin(0.3) ? t : rng_.pick(lengths);
    const int64_t d = rng_.pick(std::vector<int64_t>{1, 4, 8, 16, 19});
    const int64_t dv = rng_.pick(std::vector<int64_t>{1, 5, 8, 16, 33});
    for (const Shape& m : {Shape{t, s}, Shape{t, d}, Shape{s, d}, Shape{s, dv}, Shape{t, dv}})
      if (!fits(concat_shapes(batch, m))) return;
    const Value q = chain(of_shape(concat_shapes(batch, {t, d})), 1);
    const Value v = of_shape(concat_shapes(batch, {s, dv}));
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    const Value m = mask(batch, t, s);
    if (rng_.coin(0.2)) {
      const auto [o, lse] = ops::flash_attention(b_, q, of_shape(concat_shapes(batch, {s, d})), v, m, scale);
      keep(chain(o, 2));
      side_results_.push_back(lse);  // an output at most: lse takes no gradient
      return;
    }
    // k^T three ways: the matmul's flag, k stored transposed, or a transpose op
    // (which fusion folds into the flag).
    Value scores;
    const int64_t layout = rng_.uniform(0, 2);
    if (layout == 0) {
      scores = ops::matmul(b_, q, of_shape(concat_shapes(batch, {s, d})), false, true);
    } else if (layout == 1) {
      scores = ops::matmul(b_, q, of_shape(concat_shapes(batch, {d, s})));
    } else {
      std::vector<int64_t> perm(batch.size() + 2);
      std::iota(perm.begin(), perm.end(), 0);
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      scores = ops::matmul(b_, q, ops::transpose(b_, of_shape(concat_shapes(batch, {s, d})), perm));
    }
    if (rng_.coin(0.9)) {
      // A scale known only at run time stays within 1/sqrt(d), as a real one: a
      // larger one (a moderate value is up to 4) sharpens the softmax until its
      // backward's f32 rounding exceeds the tolerance.
      const Value sc = rng_.coin(0.8) ? scalar(scale)
                                      : ops::mul(b_, ops::tanh(b_, declare({DType::f32, {}})), scalar(scale));
      scores = rng_.coin() ? ops::mul(b_, scores, sc) : ops::mul(b_, sc, scores);
    }
    if (rng_.coin(0.85)) scores = rng_.coin() ? ops::add(b_, scores, m) : ops::add(b_, m, scores);
    const Value weights = rng_.coin(0.85) ? ops::softmax(b_, scores) : ops::log_softmax(b_, scores);
    if (rng_.coin(0.15)) keep(weights);  // used outside the attention fusion too
    attention_results_.push_back(keep(chain(ops::matmul(b_, weights, v), 2)));
  }

  void reduction() {
    const Value x = f32_value(0, 3);
    const Value produced = chain(x, 2);
    const int64_t rank = g_.type(produced).rank();
    // Row reductions (the last axis, keepdims) are what fuses: mostly those.
    std::vector<int64_t> axes;
    bool keepdims = true;
    if (rank > 0 && rng_.coin(0.6)) {
      axes = {rng_.coin() ? -1 : rank - 1};
    } else {
      for (int64_t a = 0; a < rank; ++a)
        if (rng_.coin()) axes.push_back(a);
      keepdims = rng_.coin();
    }
    static const std::vector<Value (*)(Builder&, Value, std::vector<int64_t>, bool)> reductions = {ops::sum, ops::mean,
                                                                                                   ops::max};
    const Value r = rng_.pick(reductions)(b_, produced, axes, keepdims);
    if (!keepdims) {
      keep(chain(r, 2));
      return;
    }
    // A consumer reading the producer and its reduction: x - max, x / sum, ...
    Value y = rng_.coin() ? ops::sub(b_, produced, r) : ops::mul(b_, produced, r);
    if (rng_.coin(0.4)) {  // a second reduction of the same producer, as softmax has
      const Value r2 = rng_.pick(reductions)(b_, produced, axes, true);
      y = ops::add(b_, y, r2);
    }
    keep(chain(y, 2));
  }

  void normalization() {
    const Value x = chain(f32_value(1, 3), 2);
    const int64_t rank = g_.type(x).rank();
    Value y;
    const int64_t op = rng_.uniform(0, 2);
    if (op == 2) {
      // A row of nearly equal values (tanh near saturation, a select of one
      // scalar) turns its producers' rounding (fast exp and tanh: 1-2 ulp) into
      // an error of rounding * gamma / sqrt(eps) in the result; eps >= 1e-3 and
      // gamma within [-4, 4] keep it under the tolerance. The op table (its
      // layer_norm row) checks eps 1e-5 on inputs that are not that ill-conditioned.
      const TensorType row{DType::f32, {g_.type(x).shape.back()}};
      const double eps = rng_.pick(std::vector<double>{1e-3, 0.1});
      y = ops::layer_norm(b_, x, declare(row), declare(row), eps);
    } else {
      const int64_t axis = rng_.coin(0.7) ? -1 : rng_.uniform(-rank, rank - 1);
      y = op == 0 ? ops::softmax(b_, x, axis) : ops::log_softmax(b_, x, axis);
    }
    y = chain(y, 2);
    if (rng_.coin(0.4)) y = ops::add(b_, y, x);  // residual
    keep(y);
  }

  void matmul_epilogue() {
    const Value a = f32_value(2, 3);
    const Shape as = g_.type(a).shape;
    const bool ta = rng_.coin(0.25), tb = rng_.coin(0.3);
    const int64_t m = as[as.size() - (ta ? 1 : 2)], k = as[as.size() - (ta ? 2 : 1)];
    const int64_t n = vector_dim(rng_);
    Shape batch(as.begin(), as.end() - 2);
    if (rng_.coin(0.5)) batch.clear();  // a 2-d rhs broadcast over a's batch
    const Shape bs = concat_shapes(batch, tb ? Shape{n, k} : Shape{k, n});
    Shape out(as.begin(), as.end() - 2);
    out.push_back(m);
    out.push_back(n);
    if (!fits(bs) || !fits(out)) return;
    Value y = ops::matmul(b_, a, of_shape(bs), ta, tb);
    std::vector<int> epilogue = {0, 1, 2, 3};
    for (size_t i = epilogue.size(); i > 1; --i)
      std::swap(epilogue[i - 1], epilogue[static_cast<size_t>(rng_.uniform(0, static_cast<int64_t>(i) - 1))]);
    epilogue.resize(static_cast<size_t>(rng_.uniform(0, 4)));
    for (int step : epilogue) {
      if (step == 0) y = rng_.coin() ? ops::add(b_, y, of_shape({n})) : ops::add(b_, of_shape({n}), y);  // bias
      if (step == 1) y = ops::mul(b_, y, scalar(rng_.pick(std::vector<double>{0.5, 0.125, -1.0})));
      if (step == 2) y = ops::relu(b_, y);
      if (step == 3) y = ops::add(b_, y, of_shape(out));  // residual
    }
    keep(y);
  }

  // A linear layer, x w + b with params w and b, then maybe relu: in a joint
  // graph w's gradient x^T dy and b's, the column sums of dy, are one GEMM
  // kernel, in whose epilogue w's update runs.
  void linear() {
    const Value x = f32_value(2, 2);
    const Shape xs = g_.type(x).shape;
    const int64_t n = vector_dim(rng_);
    if (!fits({xs[1], n}) || !fits({xs[0], n})) return;
    const Value w = keep(g_.declare(ValueKind::param, g_.fresh_name("w"), {DType::f32, {xs[1], n}}));
    const Value bias = keep(g_.declare(ValueKind::param, g_.fresh_name("b"), {DType::f32, {n}}));
    Value y = ops::add(b_, ops::matmul(b_, x, w), bias);
    if (rng_.coin()) y = ops::relu(b_, y);
    linear_results_.push_back(keep(y));
  }

  void reshape_or_transpose() {
    const Value x = f32_value(1, 3);
    const Shape s = g_.type(x).shape;
    const auto rank = static_cast<int64_t>(s.size());
    Value y;
    const int64_t kind = rng_.uniform(0, 2);
    if (kind == 0) {
      std::vector<int64_t> perm(s.size());
      std::iota(perm.begin(), perm.end(), 0);
      for (size_t i = perm.size(); i > 1; --i)
        std::swap(perm[i - 1], perm[static_cast<size_t>(rng_.uniform(0, static_cast<int64_t>(i) - 1))]);
      y = ops::transpose(b_, x, perm);
    } else if (kind == 1) {
      // Merge two neighbouring axes, or split one into (1, d) or (d, 1).
      Shape to = s;
      const auto at = static_cast<size_t>(rng_.uniform(0, rank - 1));
      if (at + 1 < to.size() && rng_.coin()) {
        to[at] *= to[at + 1];
        to.erase(to.begin() + static_cast<int64_t>(at) + 1);
      } else {
        to.insert(to.begin() + static_cast<int64_t>(at) + (rng_.coin() ? 1 : 0), 1);
      }
      y = ops::reshape(b_, x, to);
    } else {
      const int64_t axis = rank - 1, d = s.back();
      const int64_t start = rng_.uniform(0, d - 1);
      y = ops::slice(b_, x, {axis}, {start}, {rng_.uniform(start + 1, d)});
    }
    keep(chain(y, 2));
  }

  void integer_chain() {
    const Shape s = rng_.coin() ? g_.type(f32_value(0, 3)).shape : shape_of_rank(0, 2);
    Value i = declare({DType::i32, s});
    const bool declared = rng_.coin();
    const Value other = declared ? declare({DType::i32, broadcast_partner(rng_, s)})
                                 : ops::fill(b_, {}, static_cast<double>(rng_.uniform(1, 3)), DType::i32);
    switch (rng_.uniform(0, declared ? 4 : 3)) {
      case 0: i = ops::add(b_, i, other); break;
      case 1: i = ops::mul(b_, other, i); break;
      case 2: i = ops::maximum(b_, i, other); break;
      case 3: i = ops::neg(b_, ops::sub(b_, i, other)); break;
      default: i = ops::div(b_, i, other); break;  // a 0 in `other` is a run-time error
    }
    const Value x = of_shape(s);
    Value y = rng_.coin() ? ops::mul(b_, x, ops::cast(b_, i, DType::f32))
                          : ops::select(b_, ops::greater(b_, i, ops::fill(b_, {}, 0, DType::i32)), x, ops::neg(b_, x));
    if (!s.empty() && rng_.coin(0.3)) side_results_.push_back(ops::sum(b_, i, {-1}, true));
    keep(chain(y, 1));
  }

  // ---- the end of the graph -------------------------------------------------

  std::vector<Value> results() const {
    std::vector<Value> out;
    for (Value v : pool_)
      if (g_.value(v).kind == ValueKind::result) out.push_back(v);
    return out;
  }

  // loss = sum(y * r) (its gradient r, a random input) or mean(y * y), over one
  // or two results, often an attention's (whose backward fuses); then each
  // param's gradient is an output or updates it.
  void backward() {
    std::vector<Value> ys = results();
    if (ys.empty()) return;
    if (!linear_results_.empty() && rng_.coin(0.7)) ys.push_back(rng_.pick(linear_results_));
    if (!attention_results_.empty() && rng_.coin(0.7)) ys.push_back(rng_.pick(attention_results_));
    Value loss;
    for (int64_t i = rng_.uniform(1, 2); i > 0; --i) {
      const Value y = i == 1 ? ys.back() : rng_.pick(ys);
      const int64_t kind = rng_.uniform(0, g_.type(y).rank() > 0 ? 2 : 1);
      const Value term = kind == 0   ? ops::sum(b_, ops::mul(b_, y, declare({DType::f32, g_.type(y).shape})))
                         : kind == 1 ? ops::mean(b_, ops::mul(b_, y, y))
                                     : cross_entropy(y);
      loss = loss.valid() ? ops::add(b_, loss, term) : term;
    }
    const std::vector<Value> params = g_.declarations(ValueKind::param);
    if (params.empty()) return;
    const std::vector<Value> grads = grad(g_, loss, params);
    b_.output(loss);
    outputs_.push_back(loss);
    for (size_t i = 0; i < params.size(); ++i) {
      const Value p = params[i], dp = grads[i];
      const int64_t use = rng_.uniform(0, 2);
      if (use == 0) {
        b_.output(dp);
        outputs_.push_back(dp);
        continue;
      }
      Value step = dp;
      if (use == 2) {  // momentum: m = 0.9 m + dp, in a state of its own
        const Value m = g_.declare(ValueKind::state, g_.fresh_name(g_.name_of(p) + ".m"), g_.type(p));
        step = ops::add(b_, ops::mul(b_, m, scalar(0.9)), dp);
        assign(m, step);
      }
      assign(p, ops::sub(b_, p, ops::mul(b_, step, scalar(0.01))));
    }
  }

  // cross_entropy of logits y with labels clamped into [-1, V): -1 is ignored.
  Value cross_entropy(Value y) {
    const Shape& logits = g_.type(y).shape;
    const Value i = declare({DType::i32, Shape(logits.begin(), logits.end() - 1)});
    const int64_t classes = logits.back();
    const Value labels = ops::minimum(b_, ops::maximum(b_, i, ops::fill(b_, {}, -1, DType::i32)),
                                      ops::fill(b_, {}, static_cast<double>(classes - 1), DType::i32));
    return ops::cross_entropy(b_, y, labels, rng_.pick(std::vector<double>{0.0, 0.1}), -1);
  }

  void assign(Value target, Value v) {
    b_.emit("assign", {target, v});
    assigned_.push_back(target);
  }

  // s read at other indices than the ones an update of s writes: its first
  // column broadcast along the rows, or its transpose when it is square.
  Value read_elsewhere(Value s) {
    const Shape& shape = g_.type(s).shape;
    const auto rank = static_cast<int64_t>(shape.size());
    if (rank >= 2 && shape[shape.size() - 1] == shape[shape.size() - 2] && rng_.coin()) {
      std::vector<int64_t> perm(shape.size());
      std::iota(perm.begin(), perm.end(), 0);
      std::swap(perm[perm.size() - 1], perm[perm.size() - 2]);
      return ops::transpose(b_, s, perm);
    }
    if (rank == 0) return s;
    return ops::slice(b_, s, {rank - 1}, {0}, {1});
  }

  // Results stored into state: as they are, blended with the state's old value
  // (a read and a write of one buffer in one step), with the old value read at
  // other indices, or two states swapping values.
  void state_updates() {
    const std::vector<Value> ys = results();
    for (int64_t i = rng_.uniform(0, 2); i > 0 && !ys.empty(); --i) {
      const Value y = rng_.pick(ys);
      const Value s = g_.declare(ValueKind::state, g_.fresh_name("s"), g_.type(y));
      switch (rng_.uniform(0, 3)) {
        case 0: assign(s, y); break;
        case 1: assign(s, ops::add(b_, ops::mul(b_, s, scalar(0.5)), y)); break;
        case 2: assign(s, ops::add(b_, read_elsewhere(s), y)); break;
        default: {
          const Value t = g_.declare(ValueKind::state, g_.fresh_name("s"), g_.type(y));
          assign(s, t);
          assign(t, rng_.coin() ? s : ops::add(b_, s, y));
        }
      }
    }
    for (Value p : g_.declarations(ValueKind::param))  // params a backward pass did not update
      if (std::find(assigned_.begin(), assigned_.end(), p) == assigned_.end() && rng_.coin(0.2))
        if (auto y = existing([&](const TensorType& t) { return t == g_.type(p); }); y && *y != p)
          assign(p, ops::add(b_, ops::mul(b_, p, scalar(0.5)), *y));
  }

  void outputs() {
    std::vector<Value> candidates = results();
    candidates.insert(candidates.end(), side_results_.begin(), side_results_.end());
    if (candidates.empty()) candidates = pool_;
    std::vector<Value> outs{candidates.back()};
    for (int64_t i = rng_.uniform(0, 2); i > 0; --i) outs.push_back(rng_.pick(candidates));
    for (Value v : outs)
      if (std::find(outputs_.begin(), outputs_.end(), v) == outputs_.end()) {
        b_.output(v);
        outputs_.push_back(v);
      }
  }

  Graph& g_;
  Builder b_;
  Rng rng_;
  FusionGraphOptions opt_;
  std::vector<Value> pool_;  // f32 values so far, declarations included
  std::vector<Value> attention_results_;
  std::vector<Value> linear_results_;
  std::vector<Value> side_results_;  // outputs that no motif reads (i32 sums, lse)
  std::vector<Value> outputs_;
  std::vector<Value> assigned_;
};

}  // namespace

Graph fusion_graph(uint64_t seed, const FusionGraphOptions& options) {
  std::string name = "fusion_";
  name += std::to_string(seed);
  Graph g(name);
  FusionGenerator(g, seed, options).run();
  return g;
}

}  // namespace kiln::test
