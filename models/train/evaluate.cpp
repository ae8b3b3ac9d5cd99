#include "models/train/evaluate.h"

#include <algorithm>

#include "engine/ir/error.h"

namespace kiln::models {

DecodeTokens decode_tokens(const Task& task) { return {task.bos_id(), task.eos_id(), task.never_generated()}; }

DecodeScores evaluate_decoding(const Task& task, Decoder& decoder, Split split, int64_t limit,
                               const DecodeOptions& opts) {
  const auto& all = task.examples(split);
  const size_t count = limit > 0 ? std::min(all.size(), static_cast<size_t>(limit)) : all.size();
  if (count == 0) throw Error("the " + split_name(split) + " split of task " + task.name() + " has no examples");
  std::vector<std::vector<int32_t>> sources;
  std::vector<int64_t> max_lens;
  for (size_t i = 0; i < count; ++i) {
    sources.push_back(all[i].src);
    max_lens.push_back(task.max_output_len(all[i]));
  }
  const auto outputs = decode_all(decoder, sources, max_lens, decode_tokens(task), opts);
  DecodeScores scores;
  int64_t exact = 0;
  for (size_t i = 0; i < count; ++i) {
    exact += outputs[i] == all[i].tgt;
    scores.hypotheses.push_back(task.decode(outputs[i]));
    scores.references.push_back(all[i].tgt_text);
  }
  scores.exact_match = static_cast<double>(exact) / static_cast<double>(count);
  scores.bleu = corpus_bleu(scores.hypotheses, {scores.references});
  scores.chrf = corpus_chrf(scores.hypotheses, {scores.references});
  return scores;
}

double evaluate_loss(const Task& task, ExecutableCache& loss_graphs, Split split, int64_t tokens_per_batch,
                     int64_t max_len) {
  double total = 0;
  int64_t tokens = 0;
  for (const auto& [ids, batch] : task.eval_batches(split, tokens_per_batch)) {
    const Shape s = batch.src.shape(), t = batch.tgt_in.shape();
    if (max_len > 0 && (s.at(1) > max_len || t.at(1) > max_len)) continue;
    Executable& exe = loss_graphs.get({s.at(0), s.at(1), t.at(1)});
    exe.bind("src", batch.src);
    exe.bind("tgt_in", batch.tgt_in);
    exe.bind("tgt_out", batch.tgt_out);
    exe.run();
    // The graph's loss is a mean over the batch's target tokens.
    total += static_cast<double>(exe.output("loss").f32()()) * static_cast<double>(batch.tgt_tokens);
    tokens += batch.tgt_tokens;
  }
  if (tokens == 0)
    throw Error("the " + split_name(split) + " split of task " + task.name() + " has no target tokens" +
                (max_len > 0 ? " in examples of length <= " + std::to_string(max_len) : ""));
  return total / static_cast<double>(tokens);
}

}  // namespace kiln::models
