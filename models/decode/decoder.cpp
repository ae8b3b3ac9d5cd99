#include "models/decode/decoder.h"

#include <algorithm>

#include "engine/ir/error.h"
#include "engine/param_init.h"
#include "models/transformer/transformer.h"

namespace kiln::models {
namespace {

// The tensors the inference graphs bind: every param from `params` (checked
// against the config), and state such as the positional encodings from `params`
// when present, else its initial value (state of inference graphs is constant).
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
  for (const Graph& g : {build_encoder_graph(cfg, 1, 1), build_decoder_graph(cfg, 1, 1, 1)})
    for (Value v : g.declarations(ValueKind::state)) {
      const std::string& name = g.name_of(v);
      if (out.count(name)) continue;
      auto it = params.find(name);
      out.emplace(name, it != params.end() ? it->second : initial_value(g.value(v), 0));
    }
  return out;
}

// The encoders and the decoders never run at once: one arena serves them all.
compiler::BackendOptions with_shared_workspace(compiler::BackendOptions exec) {
  if (!exec.workspace) exec.workspace = std::make_shared<compiler::Workspace>();
  return exec;
}

}  // namespace

Decoder::Decoder(TransformerConfig config, const std::map<std::string, Tensor>& params, compiler::BackendOptions given,
                 ExecutableCache::CompileObserver on_compile)
    : config_(std::move(config)),
      exec_(with_shared_workspace(std::move(given))),
      encoders_([cfg = config_](const BatchShape& s) { return build_encoder_graph(cfg, s.batch, s.src_len); }, exec_,
                on_compile),
      decoders_(
          [cfg = config_](const BatchShape& s) { return build_decoder_graph(cfg, s.batch, s.src_len, s.tgt_len); },
          exec_, on_compile) {
  set_params(params);
}

void Decoder::set_params(const std::map<std::string, Tensor>& params) {
  auto tensors = inference_tensors(config_, params);
  encoders_.set_persistent(tensors);
  decoders_.set_persistent(std::move(tensors));
}

Tensor Decoder::encode(const Tensor& src) {
  const Shape s = src.shape();
  Executable& exe = encoders_.get({s.at(0), s.at(1), 0});
  exe.bind("src", src);
  exe.run();
  return exe.output("memory");
}

Tensor Decoder::log_probs(const Tensor& memory, const Tensor& src, const Tensor& tgt_in) {
  const Shape s = src.shape();
  Executable& exe = decoders_.get({s.at(0), s.at(1), tgt_in.shape().at(1)});
  exe.bind("memory", memory);
  exe.bind("src", src);
  exe.bind("tgt_in", tgt_in);
  exe.run();
  return exe.output("log_probs");
}

int64_t Decoder::padded_length(int64_t len) const {
  int64_t t = 8;
  while (t < len) t *= 2;
  return std::min(t, std::max(len, config_.max_len));
}

}  // namespace kiln::models
