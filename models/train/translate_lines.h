#pragma once
// Lines of text translated together, as `kiln translate` and `kiln eval --src`
// do: each line checked and encoded, the good ones decoded in batches
// (decode_all.h), the results in the lines' order.
#include <string>
#include <vector>

#include "models/decode/decode_all.h"
#include "models/eval/reference_streams.h"
#include "models/train/evaluate.h"
#include "models/train/trained_model.h"

namespace kiln::models {

struct TranslatedLine {
  std::vector<std::string> texts;  // up to opts.nbest translations, best first; none for a blank line or an error
  std::vector<double> scores;      // each one's length-penalized log-prob, as beam search ranks them
  std::vector<int32_t> source;                 // the line's subword ids
  std::vector<std::vector<int32_t>> tokens;    // each translation's ids (its end token last, if it ended)
  std::string error;               // why the line was not translated; "" if it was, or is blank
};

// A blank line (whitespace only) gets no translation and no error. A line that
// is not UTF-8 text (naming the byte), one longer than the model's positions,
// or one the task cannot encode gets an error; the other lines are translated
// all the same. Greedy decoding (opts.beam_size 1) scores too.
std::vector<TranslatedLine> translate_lines(TrainedModel& m, const std::vector<std::string>& lines,
                                            const DecodeOptions& opts);

// `sources` translated (the best of each) and scored against `references` (one
// stream per reference, each as long as `sources`), as `kiln eval --src` and
// Python's kiln.evaluate score: corpus BLEU, chrF2 and the share equal to one
// of their references. kiln::Error naming "NAME:LINE" and why for a line that
// cannot be translated (a blank one scores as an empty translation).
DecodeScores score_lines(TrainedModel& m, const std::vector<std::string>& sources, const ReferenceStreams& references,
                         const DecodeOptions& opts, const std::string& name);

}  // namespace kiln::models
