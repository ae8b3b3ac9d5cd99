#include "models/lm/lm_eval.h"

#include <limits>

#include "engine/ir/error.h"
#include "engine/param_init.h"
#include "models/lm/lm.h"
#include "models/lm/lm_checkpoint.h"

namespace kiln::models {

double mean_lm_loss(Executable& loss_graph, const std::vector<Tensor>& batches) {
  double sum = 0;
  for (const Tensor& batch : batches) {
    loss_graph.bind("tokens", batch);
    loss_graph.run();
    sum += loss_graph.output("loss").f32()();
  }
  return sum / static_cast<double>(batches.size());
}

LmTextScore score_text(const LmConfig& cfg, const std::map<std::string, Tensor>& params, const ByteCorpus& text,
                       int64_t batch, const compiler::BackendOptions& exec) {
  const DevBatches windows = dev_batches(text, batch, cfg.context, std::numeric_limits<int64_t>::max());
  const int64_t rows = windows.batches.front().shape()[0];
  auto exe = compiler::make_executable(build_lm_loss_graph(cfg, rows, cfg.context), exec);
  bind_lm_params(*exe, cfg, params);
  bind_initial_values(*exe, 0);
  return {mean_lm_loss(*exe, windows.batches), windows.windows, windows.windows * cfg.context};
}

}  // namespace kiln::models
