#pragma once
// The Transformer's hyper-parameters, the paper's presets, and their JSON form
// (stored in checkpoints, so a checkpoint names the architecture it was trained
// with).
#include <cstdint>
#include <string>

namespace kiln::models {

struct TransformerConfig {
  std::string name = "custom";  // preset name it came from
  int64_t vocab = 0;            // joint vocabulary size (set from the task)
  int64_t d_model = 128, heads = 4, d_ff = 512, enc_layers = 2, dec_layers = 2;
  double dropout = 0.1;
  int64_t max_len = 256;  // longest sequence the positional encodings cover
  double label_smoothing = 0.1;
  int32_t pad_id = 0;  // padding token: masked in attention, ignored by the loss
  // The loss as one linear_cross_entropy of the decoder's rows and the tied
  // embeddings, which never stores the [tokens, vocab] logits; false: the
  // output projection's matmul, then cross_entropy (to compare the two).
  bool fused_loss = true;
};

// tiny (d_model 128, 4 heads, d_ff 512, 2+2 layers), small (256, 4, 1024, 3+3),
// base (512, 8, 2048, 6+6); vocab is left 0 for the task to set.
// Throws kiln::Error naming the choices for any other name.
TransformerConfig preset_config(const std::string& name);

// One-line JSON object with every field.
std::string config_to_json(const TransformerConfig& cfg);
// The inverse; throws kiln::Error naming a missing or mistyped key (or bad
// JSON). The result is validated.
TransformerConfig config_from_json(const std::string& json);

// Whether two configs give the same param names and shapes (vocab, sizes,
// layers, max_len); dropout, label smoothing, the fused loss and the name do not count.
bool same_architecture(const TransformerConfig& a, const TransformerConfig& b);

// Throws kiln::Error naming the field: positive sizes, vocab >= 4, d_model %
// heads == 0, even d_model (sinusoidal encodings pair dims), 0 <= dropout < 1,
// 0 <= label_smoothing < 1, 0 <= pad_id < vocab, and a model (params and
// positional encodings) that fits in the machine's memory, naming its bytes.
void validate(const TransformerConfig& cfg);

// validate(cfg), then the shape of a graph over batch rows of src_len source
// and tgt_len target positions: positive, and no longer than cfg.max_len (the
// positional encodings). Throws kiln::Error naming the bad one.
void validate_shape(const TransformerConfig& cfg, int64_t batch, int64_t src_len, int64_t tgt_len);

}  // namespace kiln::models
