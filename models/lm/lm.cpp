#include "models/lm/lm.h"

#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "ops/assign.h"
#include "ops/attention.h"
#include "ops/constant.h"
#include "ops/dropout.h"
#include "ops/elementwise.h"
#include "ops/gather.h"
#include "ops/loss.h"
#include "ops/matmul.h"
#include "ops/normalization.h"
#include "ops/shape_ops.h"

namespace kiln::models {
namespace {

TensorType f32(Shape shape) { return {DType::f32, std::move(shape)}; }

struct ParamSpec {
  std::string name;
  TensorType type;
  Attrs attrs;
};

std::vector<ParamSpec> param_specs(const LmConfig& cfg) {
  validate(cfg);
  const int64_t d = cfg.d_model;
  const Attrs glorot{{"init", std::string("glorot")}}, zeros{{"init", std::string("zeros")}},
      ones{{"init", std::string("ones")}};
  // N(0, 0.02) as GPT-2: the tied output projection starts near uniform.
  const Attrs normal{{"init", std::string("normal")}, {"std", 0.02}};
  std::vector<ParamSpec> out{{"embed", f32({cfg.vocab, d}), normal}};
  if (cfg.positions == "learned") out.push_back({"pos_embed", f32({cfg.context, d}), normal});
  const auto norm = [&](const std::string& p) {
    out.push_back({p + ".gamma", f32({d}), ones});
    out.push_back({p + ".beta", f32({d}), zeros});
  };
  const auto linear = [&](const std::string& p, const char* w, const char* bias, int64_t in, int64_t units) {
    out.push_back({p + "." + w, f32({in, units}), glorot});
    out.push_back({p + "." + bias, f32({units}), zeros});
  };
  for (int64_t l = 0; l < cfg.layers; ++l) {
    const std::string p = "h." + std::to_string(l);
    norm(p + ".ln1");
    for (const char* w : {"q", "k", "v", "o"})
      linear(p + ".attn", (std::string("w") + w).c_str(), (std::string("b") + w).c_str(), d, d);
    norm(p + ".ln2");
    linear(p + ".mlp", "w1", "b1", d, cfg.d_ff);
    linear(p + ".mlp", "w2", "b2", cfg.d_ff, d);
  }
  if (cfg.norm == "pre") norm("ln_f");
  return out;
}

const std::string kPosEnc = "pos_enc", kRope = "rope", kTokens = "tokens";

std::string cache_name(int64_t layer, const char* what) { return "h." + std::to_string(layer) + ".attn." + what; }

// Where a layer's attention reads its keys and values: the whole window
// (training, causal), or a step's caches (generation, masked after %pos).
struct StepAt {
  Value pos;   // i32[]
  Value mask;  // f32[1, 1, 1, cache_len]: -inf after pos
  int64_t cache_len = 0;
};

// The graph's params and position tables, and the blocks built from them.
class Net {
 public:
  Net(Builder& b, const LmConfig& cfg, std::optional<Value> dropout_key) : b_(b), cfg_(cfg), key_(dropout_key) {
    for (ParamSpec& s : param_specs(cfg)) params_.emplace(s.name, b.param(s.name, s.type, std::move(s.attrs)));
    const Attrs sinusoidal{{"init", std::string("sinusoidal")}};
    if (cfg.positions == "sinusoidal") table_ = b.state(kPosEnc, f32({cfg.max_len, cfg.d_model}), sinusoidal);
    if (cfg.positions == "rope") table_ = b.state(kRope, f32({cfg.max_len, head_dim()}), sinusoidal);
  }

  int64_t head_dim() const { return cfg_.d_model / cfg_.heads; }

  // Token embeddings plus the added positions (none with rope), then dropout:
  // tokens i32[B, L] at positions 0..L-1, or at `pos` when L == 1 and given.
  Value embed(Value tokens, std::optional<Value> pos) {
    const Builder::Scope scope(b_, "embed");
    const Shape& s = b_.type(tokens).shape;
    const int64_t rows = s[0] * s[1], len = s[1], d = cfg_.d_model;
    Value x = ops::gather(b_, param("embed"), ops::reshape(b_, tokens, {rows}));
    if (cfg_.positions != "rope") {
      const Value table = cfg_.positions == "learned" ? param("pos_embed") : table_;
      const Value at =
          pos ? ops::gather(b_, table, ops::reshape(b_, *pos, {1})) : ops::slice(b_, table, {0}, {0}, {len});
      x = ops::reshape(b_, ops::add(b_, ops::reshape(b_, x, {s[0], len, d}), at), {rows, d});
    }
    return dropout(x);
  }

  // One block `h.L` over rows f32[B*L, D].
  Value block(Value x, int64_t layer, int64_t batch, const std::optional<StepAt>& step) {
    const std::string p = "h." + std::to_string(layer);
    const auto attention = [&](Value in) {
      const Builder::Scope scope(b_, p + ".attn");
      return attend(in, p + ".attn", layer, batch, step);
    };
    const auto mlp = [&](Value in) {
      const Builder::Scope scope(b_, p + ".mlp");
      return linear(gelu(linear(in, p + ".mlp", "w1", "b1")), p + ".mlp", "w2", "b2");
    };
    if (cfg_.norm == "pre") {
      x = ops::add(b_, x, dropout(attention(norm(x, p + ".ln1"))));
      return ops::add(b_, x, dropout(mlp(norm(x, p + ".ln2"))));
    }
    x = norm(ops::add(b_, x, dropout(attention(x))), p + ".ln1");
    return norm(ops::add(b_, x, dropout(mlp(x))), p + ".ln2");
  }

  // The last rows before the tied projection: the final LN with pre-norm.
  Value finish(Value x) { return cfg_.norm == "pre" ? norm(x, "ln_f") : x; }

  Value param(const std::string& name) const {
    const auto it = params_.find(name);
    if (it == params_.end()) throw Error("language model: no param named '" + name + "'");
    return it->second;
  }

 private:
  Value linear(Value x, const std::string& prefix, const std::string& w, const std::string& bias) {
    return ops::add(b_, ops::matmul(b_, x, param(prefix + "." + w)), param(prefix + "." + bias));
  }

  Value norm(Value x, const std::string& prefix) {
    const Builder::Scope scope(b_, prefix);
    return ops::layer_norm(b_, x, param(prefix + ".gamma"), param(prefix + ".beta"));
  }

  Value scalar(double v) { return ops::fill(b_, {}, v); }

  // GELU, tanh form (GPT-2's): 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))).
  Value gelu(Value x) {
    const Value cube = ops::mul(b_, ops::mul(b_, x, x), x);
    const Value inner =
        ops::mul(b_, ops::add(b_, x, ops::mul(b_, cube, scalar(0.044715))), scalar(std::sqrt(2.0 / M_PI)));
    return ops::mul(b_, ops::mul(b_, x, scalar(0.5)), ops::add(b_, ops::tanh(b_, inner), scalar(1.0)));
  }

  Value dropout(Value x) {
    if (!key_ || cfg_.dropout == 0) return x;
    return ops::dropout(b_, x, *key_, cfg_.dropout, next_seed_++);
  }

  // The rotary table's sin and cos halves, f32[rows, d/2] each: the sinusoidal
  // table holds sin(p w_i) at column 2i and cos(p w_i) at 2i + 1, w_i =
  // 10000^(-2i/d), the frequencies of RoPE (Su et al.).
  std::pair<Value, Value> rope_sin_cos(Value rows_of_table) {
    const int64_t rows = b_.type(rows_of_table).shape[0], half = head_dim() / 2;
    const Value pairs = ops::reshape(b_, rows_of_table, {rows, half, 2});
    const auto column = [&](int64_t c) {
      return ops::reshape(b_, ops::slice(b_, pairs, {2}, {c}, {c + 1}), {rows, 1, half});
    };
    return {column(0), column(1)};
  }

  // x f32[B, L, H*d] with each head's pairs (i, i + d/2) rotated by the angle of
  // its position (GPT-NeoX's halves): sin, cos f32[L or 1, 1, d/2].
  Value rotate(Value x, Value sin, Value cos) {
    const Shape s = b_.type(x).shape;
    const int64_t d = head_dim(), half = d / 2;
    const Value heads = ops::reshape(b_, x, {s[0], s[1], cfg_.heads, d});
    const Value x1 = ops::slice(b_, heads, {3}, {0}, {half}), x2 = ops::slice(b_, heads, {3}, {half}, {d});
    const Value r1 = ops::sub(b_, ops::mul(b_, x1, cos), ops::mul(b_, x2, sin));
    const Value r2 = ops::add(b_, ops::mul(b_, x2, cos), ops::mul(b_, x1, sin));
    return ops::reshape(b_, ops::concat(b_, {r1, r2}, 3), s);
  }

  // Writes `update` at position pos of `cache` (axis 1) when the step ends;
  // returns the cache as this step reads it.
  Value write_cache(Value cache, Value pos, Value update) {
    const Value next = ops::update_slice(b_, cache, update, pos, 1);
    ops::assign(b_, cache, next);
    return next;
  }

  // Causal multi-head self-attention of rows f32[B*L, D] -> rows f32[B*L, D].
  Value attend(Value rows, const std::string& prefix, int64_t layer, int64_t batch, const std::optional<StepAt>& step) {
    const int64_t d = cfg_.d_model, len = b_.type(rows).shape[0] / batch;
    const auto project = [&](const char* which) {
      return ops::reshape(b_, linear(rows, prefix, std::string("w") + which, std::string("b") + which),
                          {batch, len, d});
    };
    Value q = project("q"), k = project("k"), v = project("v");
    if (cfg_.positions == "rope") {
      const Value at =
          step ? ops::gather(b_, table_, ops::reshape(b_, step->pos, {1})) : ops::slice(b_, table_, {0}, {0}, {len});
      const auto [sin, cos] = rope_sin_cos(at);
      q = rotate(q, sin, cos);
      k = rotate(k, sin, cos);
    }
    const double scale = 1.0 / std::sqrt(static_cast<double>(head_dim()));
    Value context;
    if (step) {
      const TensorType cache{DType::f32, {batch, step->cache_len, d}};
      const Value keys = write_cache(b_.state(cache_name(layer, "key_cache"), cache), step->pos, k);
      const Value values = write_cache(b_.state(cache_name(layer, "value_cache"), cache), step->pos, v);
      context = ops::flash_attention(b_, q, keys, values, step->mask, scale, cfg_.heads).first;
    } else {
      context = ops::flash_attention(b_, q, k, v, scalar(0.0), scale, cfg_.heads, true).first;
    }
    return linear(ops::reshape(b_, context, {batch * len, d}), prefix, "wo", "bo");
  }

  Builder& b_;
  const LmConfig& cfg_;
  std::optional<Value> key_;
  std::map<std::string, Value> params_;
  Value table_;
  int64_t next_seed_ = 1;
};

void check_len(const LmConfig& cfg, int64_t batch, int64_t len, int64_t longest, const char* what) {
  validate(cfg);
  if (batch <= 0) throw Error("language model: batch must be positive, got " + std::to_string(batch));
  if (len <= 0 || len > longest)
    throw Error(std::string("language model: ") + what + " " + std::to_string(len) + " must be in 1.." +
                std::to_string(longest));
}

// The forward's last rows f32[B*T, D] of tokens i32[B, T].
Value forward_rows(Net& net, Value tokens, int64_t batch, int64_t layers) {
  Value x = net.embed(tokens, std::nullopt);
  for (int64_t l = 0; l < layers; ++l) x = net.block(x, l, batch, std::nullopt);
  return net.finish(x);
}

// Declares %tokens i32[B, T+1] and emits the mean next-token loss, named "loss".
Value emit_loss(Builder& b, const LmConfig& cfg, int64_t batch, int64_t len, bool training) {
  check_len(cfg, batch, len, cfg.context, "sequence length");
  const Value tokens = b.input(kTokens, {DType::i32, {batch, len + 1}});
  std::optional<Value> key;
  if (training) key = b.state(kStepState, {DType::i32, {}});
  Net net(b, cfg, key);
  Value inputs, labels;
  {
    const Builder::Scope scope(b, "embed");
    inputs = ops::slice(b, tokens, {1}, {0}, {len});
    labels = ops::reshape(b, ops::slice(b, tokens, {1}, {1}, {len + 1}), {batch * len});
  }
  const Value rows = forward_rows(net, inputs, batch, cfg.layers);
  const Builder::Scope scope(b, "loss");
  const Value loss = ops::linear_cross_entropy(b, rows, net.param("embed"), labels).first;
  b.graph().rename(loss, "loss");
  return loss;
}

}  // namespace

Graph build_lm_train_graph(const LmConfig& cfg, int64_t batch, int64_t len, const AdamOptions& adam) {
  Graph g("lm_train");
  Builder b(g);
  append_adam(g, emit_loss(b, cfg, batch, len, true), adam);
  return g;
}

Graph build_lm_loss_graph(const LmConfig& cfg, int64_t batch, int64_t len) {
  Graph g("lm_loss");
  Builder b(g);
  b.output(emit_loss(b, cfg, batch, len, false));
  return g;
}

Graph build_lm_logits_graph(const LmConfig& cfg, int64_t batch, int64_t len) {
  check_len(cfg, batch, len, cfg.max_len, "sequence length");
  Graph g("lm_logits");
  Builder b(g);
  const Value tokens = b.input(kTokens, {DType::i32, {batch, len}});
  Net net(b, cfg, std::nullopt);
  const Value rows = forward_rows(net, tokens, batch, cfg.layers);
  const Builder::Scope scope(b, "output");
  const Value logits = ops::matmul(b, rows, net.param("embed"), false, true);
  const Value log_probs = ops::reshape(b, ops::log_softmax(b, logits), {batch, len, cfg.vocab});
  g.rename(log_probs, "log_probs");
  b.output(log_probs);
  return g;
}

Graph build_lm_step_graph(const LmConfig& cfg, int64_t batch, int64_t cache_len) {
  check_len(cfg, batch, cache_len, cfg.max_len, "cache length");
  Graph g("lm_step");
  Builder b(g);
  const Value token = b.input("token", {DType::i32, {batch, 1}});
  const Value pos = b.input("pos", {DType::i32, {}});
  Net net(b, cfg, std::nullopt);
  StepAt step{pos, Value(), cache_len};
  {
    const Builder::Scope scope(b, "mask");
    const Value future = ops::greater(b, ops::iota(b, {cache_len}), pos);
    const Value minus_inf = ops::fill(b, {}, -std::numeric_limits<double>::infinity());
    step.mask = ops::reshape(b, ops::select(b, future, minus_inf, ops::fill(b, {}, 0.0)), {1, 1, 1, cache_len});
  }
  Value x = net.embed(token, pos);
  for (int64_t l = 0; l < cfg.layers; ++l) x = net.block(x, l, batch, step);
  x = net.finish(x);
  const Builder::Scope scope(b, "output");
  const Value log_probs = ops::log_softmax(b, ops::matmul(b, x, net.param("embed"), false, true));
  g.rename(log_probs, "log_probs");
  b.output(log_probs);
  return g;
}

std::vector<std::string> lm_cache_names(const LmConfig& cfg) {
  std::vector<std::string> names;
  for (int64_t l = 0; l < cfg.layers; ++l) {
    names.push_back(cache_name(l, "key_cache"));
    names.push_back(cache_name(l, "value_cache"));
  }
  return names;
}

std::vector<std::pair<std::string, TensorType>> lm_param_types(const LmConfig& cfg) {
  std::vector<std::pair<std::string, TensorType>> out;
  for (const ParamSpec& s : param_specs(cfg)) out.emplace_back(s.name, s.type);
  return out;
}

}  // namespace kiln::models
