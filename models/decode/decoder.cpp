#include "models/decode/decoder.h"

#include <algorithm>

#include "engine/ir/error.h"
#include "engine/param_init.h"
#include "models/transformer/decoder_step.h"
#include "models/transformer/transformer.h"

namespace kiln::models {
namespace {

// The tensors every inference graph binds: every param from `params` (checked
// against the config), and the model's state (the positional encodings) from
// `params` when present, else its initial value (it is constant). The step
// graph's caches are not among them: they belong to one shape each.
std::map<std::string, Tensor> inference_tensors(const TransformerConfig& cfg,
                                                const std::map<std::string, Tensor>& params) {
  std::map<std::string, Tensor> out;
  for (const auto& [name, type] : param_types(cfg)) {
    auto it = params.find(name);
    if (it == params.end()) throw Error("decoder: param %" + name + " is missing");
    if (!(it->second.type() == type))
      throw Error("decoder: param %" + name + " is " + type_str(it->second.type()) + ", the config needs " +
                  type_str(type));
    out.emplace(name, it->second);
  }
  const Graph encoder = build_encoder_graph(cfg, 1, 1);
  for (Value v : encoder.declarations(ValueKind::state)) {
    const std::string& name = encoder.name_of(v);
    auto it = params.find(name);
    out.emplace(name, it != params.end() ? it->second : initial_value(encoder.value(v), 0));
  }
  return out;
}

// The encoders and the steps never run at once: one arena serves them all.
compiler::BackendOptions with_shared_workspace(compiler::BackendOptions exec) {
  if (!exec.workspace) exec.workspace = std::make_shared<compiler::Workspace>();
  return exec;
}

// Rows `rows` of t (along its first axis), in that order.
Tensor take_rows(const Tensor& t, const std::vector<int32_t>& rows) {
  return t.visit([&](const auto& a) {
    using Array = std::decay_t<decltype(a)>;
    std::vector<size_t> shape(a.shape().begin(), a.shape().end());
    const size_t row = a.size() / shape.at(0);
    shape[0] = rows.size();
    Array out = Array::from_shape(shape);
    for (size_t r = 0; r < rows.size(); ++r)
      std::copy_n(a.data() + static_cast<size_t>(rows[r]) * row, row, out.data() + r * row);
    return Tensor(std::move(out));
  });
}

// Row r of `to` gets row parents[r] of `from` (along the first axis) in the
// first `count` positions of `axis`, the rest of `to` left as it is.
void copy_row_prefixes(const Tensor& from, Tensor& to, const std::vector<int32_t>& parents, size_t axis,
                       int64_t count) {
  from.visit([&](const auto& a) {
    using Array = std::decay_t<decltype(a)>;
    auto& out = to.as<typename Array::value_type>();
    const auto& shape = a.shape();
    size_t outer = 1, inner = 1;  // per row: outer blocks of shape[axis] * inner elements
    for (size_t d = 1; d < axis; ++d) outer *= shape[d];
    for (size_t d = axis + 1; d < shape.size(); ++d) inner *= shape[d];
    const size_t block = shape[axis] * inner, row = outer * block, prefix = static_cast<size_t>(count) * inner;
    for (size_t r = 0; r < parents.size(); ++r)
      for (size_t o = 0; o < outer; ++o)
        std::copy_n(a.data() + static_cast<size_t>(parents[r]) * row + o * block, prefix,
                    out.data() + r * row + o * block);
  });
}

}  // namespace

Decoder::Decoder(TransformerConfig config, const std::map<std::string, Tensor>& params, compiler::BackendOptions given,
                 ExecutableCache::CompileObserver on_compile)
    : config_(std::move(config)),
      exec_(with_shared_workspace(std::move(given))),
      encoders_([cfg = config_](const BatchShape& s) { return build_encoder_graph(cfg, s.batch, s.src_len); }, exec_,
                on_compile),
      steps_(
          [cfg = config_](const BatchShape& s) { return build_decoder_step_graph(cfg, s.batch, s.src_len, s.tgt_len); },
          exec_, on_compile) {
  set_params(params);
}

void Decoder::set_params(const std::map<std::string, Tensor>& params) {
  auto tensors = inference_tensors(config_, params);
  encoders_.set_persistent(tensors);
  steps_.set_persistent(std::move(tensors));
  step_ = nullptr;
}

void Decoder::start(const Tensor& src, int64_t copies, int64_t steps) {
  if (copies < 1) throw Error("decoder: each source row needs at least one row, got " + std::to_string(copies));
  step_ = nullptr;
  const Shape s = src.shape();
  Executable& encoder = encoders_.get({s.at(0), s.at(1), 0});
  encoder.bind("src", src);
  encoder.run();

  rows_ = s.at(0) * copies;
  source_of_.resize(static_cast<size_t>(rows_));
  for (int64_t r = 0; r < rows_; ++r) source_of_[static_cast<size_t>(r)] = static_cast<int32_t>(r / copies);
  cache_len_ = padded_length(steps);
  Executable& step = steps_.get({rows_, s.at(1), cache_len_});
  step.bind("src", take_rows(src, source_of_));
  for (const std::string& name : cross_attention_names(config_))
    step.bind(name, take_rows(encoder.output(name), source_of_));
  // Zeros on this shape's first batch; later batches start from what the last
  // one left. Either way positions not written yet are masked, and finite, so
  // they weigh exactly 0.
  for (const std::string& name : step_cache_names(config_))
    if (!step.is_bound(name)) step.bind(name, Tensor::zeros(step.graph().type(*step.graph().find(name))));
  step_ = &step;
  position_ = 0;
}

const Tensor& Decoder::step(const std::vector<int32_t>& tokens) {
  if (!step_) throw Error("decoder: step() without a batch (start() first)");
  if (static_cast<int64_t>(tokens.size()) != rows_)
    throw Error("decoder: " + std::to_string(tokens.size()) + " tokens for " + std::to_string(rows_) + " rows");
  if (position_ >= cache_len_)
    throw Error("decoder: position " + std::to_string(position_) + " is past the cache's " +
                std::to_string(cache_len_) + " (start() with more steps)");
  Tensor::I32 token = Tensor::I32::from_shape({static_cast<size_t>(rows_), 1});
  std::copy(tokens.begin(), tokens.end(), token.data());
  step_->bind(kStepToken, Tensor(std::move(token)));
  step_->bind(kStepPosition, Tensor(Tensor::I32(static_cast<int32_t>(position_))));
  step_->run();
  ++position_;
  return step_->output("log_probs");
}

void Decoder::reorder(const std::vector<int32_t>& parents) {
  if (!step_) throw Error("decoder: reorder() without a batch (start() first)");
  if (static_cast<int64_t>(parents.size()) != rows_)
    throw Error("decoder: " + std::to_string(parents.size()) + " parents for " + std::to_string(rows_) + " rows");
  bool moves = false, same_sources = true;
  std::vector<int32_t> sources(parents.size());
  for (size_t r = 0; r < parents.size(); ++r) {
    const int32_t p = parents[r];
    if (p < 0 || p >= rows_) throw Error("decoder: parent row " + std::to_string(p) + " of " + std::to_string(rows_));
    moves |= p != static_cast<int32_t>(r);
    sources[r] = source_of_[static_cast<size_t>(p)];
    same_sources &= sources[r] == source_of_[r];
  }
  if (!moves) return;
  // Only the positions written so far are history; the rest stay as they are
  // (masked, and finite). Positions are axis 1 of the token cache [B,T], axis 2
  // of the keys and values [B,H,T,D/H].
  for (const std::string& name : step_cache_names(config_)) {
    Tensor cache = step_->unbind(name);
    Tensor& spare = spare_caches_[name];
    if (!(spare.type() == cache.type())) spare = Tensor::zeros(cache.type());
    copy_row_prefixes(cache, spare, parents, cache.shape().size() == 2 ? 1 : 2, position_);
    step_->bind(name, std::move(spare));
    spare = std::move(cache);
  }
  // A row's source goes with its history. Beam search's parents are rows of
  // the same source, whose keys and values the row already has.
  if (same_sources) return;
  source_of_ = std::move(sources);
  std::vector<std::string> names = cross_attention_names(config_);
  names.push_back("src");
  for (const std::string& name : names) step_->bind(name, take_rows(step_->binding(name), parents));
}

int64_t Decoder::padded_length(int64_t len) const {
  int64_t t = 8;
  while (t < len) t *= 2;
  return std::min(t, std::max(len, config_.max_len));
}

}  // namespace kiln::models
