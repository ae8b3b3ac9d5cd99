#pragma once
// The decoder-only language model's hyper-parameters (GPT's shape: a stack of
// causal self-attention blocks over one token stream, tied input and output
// embeddings) and their JSON form, which checkpoints keep.
#include <cstdint>
#include <iterator>
#include <string>
#include <vector>

namespace kiln::models {

struct LmConfig {
  int64_t vocab = 256;  // bytes: every byte value a token
  int64_t d_model = 128, heads = 4, d_ff = 512, layers = 4;
  // The window a training step sees; learned positions are a table of this
  // many rows, sinusoidal and rotary ones are computed for max_len positions.
  int64_t context = 256;
  int64_t max_len = 256;           // positions the model can place (>= context)
  std::string positions = "rope";  // learned | sinusoidal | rope
  std::string norm = "pre";        // pre (GPT-2: x + f(LN(x)), a final LN) | post (the paper's LN(x + f(x)))
  double dropout = 0.0;
};

// The choices of positions and norm, for flags and errors.
inline constexpr const char* kLmPositions[] = {"learned", "sinusoidal", "rope"};
inline constexpr const char* kLmNorms[] = {"pre", "post"};
template <size_t N>
std::vector<std::string> choices(const char* const (&names)[N]) {
  return {std::begin(names), std::end(names)};
}

// "(vocab 256, d_model 128, 4 heads, d_ff 512, 4 layers, context 256, rope positions, pre-norm)"
std::string describe(const LmConfig& cfg);

// One-line JSON object with every field.
std::string lm_config_to_json(const LmConfig& cfg);
// The inverse; kiln::Error naming a missing, mistyped or bad key (or bad JSON). Validated.
LmConfig lm_config_from_json(const std::string& json);

// kiln::Error naming the field: positive sizes, d_model % heads == 0, an even
// head size with rope (pairs of dims rotate) and an even d_model with
// sinusoidal positions, context <= max_len, learned positions with max_len ==
// context, 0 <= dropout < 1, and params that fit in the machine's memory.
void validate(const LmConfig& cfg);

}  // namespace kiln::models
