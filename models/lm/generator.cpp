#include "models/lm/generator.h"

#include "engine/ir/error.h"
#include "engine/param_init.h"
#include "models/lm/lm.h"
#include "models/lm/lm_checkpoint.h"

namespace kiln::models {

LmGenerator::LmGenerator(const LmConfig& cfg, const std::map<std::string, Tensor>& params, int64_t cache_len,
                         const compiler::BackendOptions& exec)
    : cfg_(cfg), cache_len_(cache_len), exe_(compiler::make_executable(build_lm_step_graph(cfg, 1, cache_len), exec)) {
  bind_lm_params(*exe_, cfg, params);
  bind_initial_values(*exe_, 0);  // the caches (zeros) and the position tables
}

const float* LmGenerator::step(int32_t token, int64_t pos) {
  auto t = Tensor::I32::from_shape({1, 1});
  t(0, 0) = token;
  exe_->bind("token", Tensor(std::move(t)));
  exe_->bind("pos", Tensor(Tensor::I32(static_cast<int32_t>(pos))));
  exe_->run();
  return exe_->output("log_probs").f32().data();
}

std::vector<int32_t> LmGenerator::generate(std::vector<int32_t> prompt, int64_t max_tokens, Sampler& sampler,
                                           const std::function<void(int32_t)>& emit) {
  if (prompt.empty()) prompt.push_back('\n');
  const auto prompt_len = static_cast<int64_t>(prompt.size());
  if (prompt_len >= cache_len_)
    throw Error("the prompt's " + std::to_string(prompt_len) + " tokens leave no room to generate in the model's " +
                std::to_string(cache_len_) + " positions");
  for (const int32_t t : prompt)
    if (t < 0 || t >= cfg_.vocab) throw Error("prompt token " + std::to_string(t) + " is outside the vocabulary");
  const float* log_probs = nullptr;
  for (int64_t pos = 0; pos < prompt_len; ++pos) log_probs = step(prompt[static_cast<size_t>(pos)], pos);
  std::vector<int32_t> out;
  for (int64_t pos = prompt_len; static_cast<int64_t>(out.size()) < max_tokens; ++pos) {
    const int32_t token = sampler.next(log_probs, cfg_.vocab);
    out.push_back(token);
    if (emit) emit(token);
    if (pos >= cache_len_ || static_cast<int64_t>(out.size()) == max_tokens) break;
    log_probs = step(token, pos);
  }
  return out;
}

}  // namespace kiln::models
