#include "models/train/translate_lines.h"

#include <algorithm>
#include <cctype>

#include "engine/ir/error.h"
#include "models/tasks/parallel_text.h"
#include "models/train/evaluate.h"
#include "models/transformer/config.h"

namespace kiln::models {
namespace {

bool blank(const std::string& s) {
  return std::all_of(s.begin(), s.end(), [](unsigned char c) { return std::isspace(c); });
}

// The line as an example to decode; kiln::Error if it cannot be.
Example encoded(const TrainedModel& m, const std::string& line) {
  if (const std::string why = not_text(line); !why.empty()) throw Error("not text: " + why);
  Example e;
  e.src = m.task->encode(line);
  e.src_text = line;
  // Checked here, not when its batch's graphs are built, so it fails alone.
  validate_shape(m.decoder->config(), 1, static_cast<int64_t>(e.src.size()),
                 std::max<int64_t>(m.task->max_output_len(e), 1));
  return e;
}

}  // namespace

std::vector<TranslatedLine> translate_lines(TrainedModel& m, const std::vector<std::string>& lines,
                                            const DecodeOptions& opts) {
  std::vector<TranslatedLine> out(lines.size());
  std::vector<size_t> decoded;  // the lines that go to the decoder
  std::vector<std::vector<int32_t>> sources;
  std::vector<int64_t> max_lens;
  for (size_t i = 0; i < lines.size(); ++i) {
    if (blank(lines[i])) continue;
    try {
      const Example e = encoded(m, lines[i]);
      decoded.push_back(i);
      sources.push_back(e.src);
      max_lens.push_back(m.task->max_output_len(e));
    } catch (const Error& e) {
      out[i].error = e.what();
    }
  }
  const auto hyps = decode_nbest(*m.decoder, sources, max_lens, decode_tokens(*m.task), opts);
  for (size_t j = 0; j < decoded.size(); ++j) {
    // A line allowed no output tokens (copy's lone start token) has no
    // hypothesis: its translation is the empty output.
    out[decoded[j]].source = sources[j];
    for (const Hypothesis& h : hyps[j].empty() ? std::vector<Hypothesis>{Hypothesis{}} : hyps[j]) {
      out[decoded[j]].texts.push_back(m.task->decode(h.tokens));
      out[decoded[j]].scores.push_back(h.score);
      out[decoded[j]].tokens.push_back(h.tokens);
    }
  }
  return out;
}

DecodeScores score_lines(TrainedModel& m, const std::vector<std::string>& sources, const ReferenceStreams& references,
                         const DecodeOptions& opts, const std::string& name) {
  DecodeOptions best = opts;
  best.nbest = 1;
  const std::vector<TranslatedLine> translated = translate_lines(m, sources, best);
  DecodeScores s;
  int64_t exact = 0;
  for (size_t i = 0; i < translated.size(); ++i) {
    if (!translated[i].error.empty()) throw Error(name + ":" + std::to_string(i + 1) + ": " + translated[i].error);
    s.hypotheses.push_back(translated[i].texts.empty() ? "" : translated[i].texts.front());
    exact += std::any_of(references.begin(), references.end(),
                         [&](const auto& refs) { return refs.at(i) == s.hypotheses[i]; });
  }
  s.references = references.front();
  s.exact_match = static_cast<double>(exact) / static_cast<double>(std::max<size_t>(sources.size(), 1));
  s.bleu = corpus_bleu(s.hypotheses, references);
  s.chrf = corpus_chrf(s.hypotheses, references);
  return s;
}

}  // namespace kiln::models
