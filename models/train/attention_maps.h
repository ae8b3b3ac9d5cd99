#pragma once
// `kiln translate --attention DIR`: what each attention of a trained model
// looked at for a translated sentence, as the Illustrated and the Annotated
// Transformer show it: every layer's and head's encoder self-attention, decoder
// self-attention and cross-attention weights over the subword pieces, as .npy
// files and one page of heatmaps. The weights come from the teacher-forced
// model over the source and the chosen translation (build_attention_graph),
// which are the weights decoding computed at each step; training and decoding
// themselves never store them (flash_attention).
#include <string>
#include <vector>

#include "engine/tensor/tensor.h"
#include "models/train/trained_model.h"
#include "models/train/translate_lines.h"

namespace kiln::models {

struct AttentionMap {
  std::string name;  // the attention's scope: "enc.0.self_attn", "dec.1.cross_attn"
  Tensor weights;    // f32[H, queries, keys]; each row sums to 1
};

struct SentenceAttention {
  std::string source_text, output_text;
  std::vector<int32_t> source_ids, input_ids, output_ids;  // the pieces' ids
  std::vector<std::string> source_pieces;  // the encoder's positions (keys of enc.* and cross-attention)
  std::vector<std::string> input_pieces;   // the decoder's positions: the start token, then the output's
  std::vector<std::string> output_pieces;  // what each decoder position predicts: the output, then the end
  std::vector<AttentionMap> maps;          // encoder layers', then each decoder layer's self and cross
};

// The attention of `m` over source ids `source` and the translation `tokens`
// (a hypothesis's, with its end token if it ended), run by the interpreter.
SentenceAttention sentence_attention(TrainedModel& m, const std::string& source_text,
                                     const std::vector<int32_t>& source, const std::vector<int32_t>& tokens);

// sentence_attention of each translated line that has a translation (its best),
// in order: what `kiln translate --attention` and Python's Translator.attention show.
std::vector<SentenceAttention> translated_attention(TrainedModel& m, const std::vector<std::string>& lines,
                                                    const std::vector<TranslatedLine>& translated);

// Writes DIR/NNNN/<attention>.npy (f32[H, queries, keys]) and DIR/NNNN/pieces.json
// (the texts, the pieces and their ids) for each sentence (NNNN its 1-based number), and DIR/index.html, a page of
// heatmaps that opens from the file system. Every file atomically.
void write_attention(const std::string& dir, const std::vector<SentenceAttention>& sentences);

}  // namespace kiln::models
