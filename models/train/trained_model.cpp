#include "models/train/trained_model.h"

#include <algorithm>
#include <cctype>

#include "engine/ir/error.h"
#include "models/train/evaluate.h"
#include "models/train/task_setup.h"

namespace kiln::models {
namespace {

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

// Why `s` is not a line of UTF-8 text ("" if it is): a NUL or another control
// byte, or a malformed UTF-8 sequence, at a 1-based byte column.
std::string not_text(const std::string& s) {
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    const std::string at = " at byte " + std::to_string(i + 1);
    if (c < 0x80) {
      if (c < 0x20 && c != '\t' && c != '\r') return "control byte " + std::to_string(c) + at;
      ++i;
      continue;
    }
    const size_t len = c >= 0xF0 && c <= 0xF4 ? 4 : c >= 0xE0 ? 3 : c >= 0xC2 && c <= 0xDF ? 2 : 0;
    bool ok = len > 0 && i + len <= s.size() && !(c >= 0xF0 && len != 4);
    for (size_t k = 1; ok && k < len; ++k) ok = (static_cast<unsigned char>(s[i + k]) & 0xC0) == 0x80;
    if (!ok) return "malformed UTF-8" + at;
    i += len;
  }
  return "";
}

}  // namespace

TrainedModel load_trained_model(const std::string& checkpoint_dir, const std::string& data_path,
                                const compiler::BackendOptions& exec) {
  TrainedModel m;
  m.checkpoint = load_checkpoint(checkpoint_dir);
  check_matches(m.checkpoint, m.checkpoint.config);
  m.task = make_task(m.checkpoint.task, checkpoint_dir, data_path, false);
  if (m.task->vocab_size() != m.checkpoint.config.vocab)
    throw Error(checkpoint_file(checkpoint_dir) + ": the model's vocabulary has " +
                std::to_string(m.checkpoint.config.vocab) + " tokens, task " + m.task->name() + "'s has " +
                std::to_string(m.task->vocab_size()));
  m.decoder = std::make_unique<Decoder>(m.checkpoint.config, m.checkpoint.tensors, exec);
  return m;
}

std::string translate(TrainedModel& m, const std::string& sentence, const DecodeOptions& opts) {
  if (blank(sentence)) throw Error("the line is empty: nothing to translate");
  if (const std::string why = not_text(sentence); !why.empty()) throw Error("not text: " + why);
  Example e;
  e.src = m.task->encode(sentence);
  e.src_text = sentence;
  const auto out = decode_all(*m.decoder, {e.src}, {m.task->max_output_len(e)}, decode_tokens(*m.task), opts);
  return m.task->decode(out.front());
}

}  // namespace kiln::models
