#pragma once
// The table `kiln profile` and `kiln train --profile` print: one row per kernel
// (its ops, model scope, calls, time, share of the step, GFLOP/s and GB/s), with the limit
// it is nearer, the machine's FMA peak or its memory bandwidth (measured here,
// at the profile's thread count), and the share of that limit it reaches.
#include <ostream>
#include <string>
#include <vector>

#include "compiler/profile.h"

namespace kiln::cli {

void print_profile_table(const compiler::Program& p, const compiler::RunProfile& r, int threads, std::ostream& out);

// `kiln profile --by scope`: a row per model part (compiler::scope_profile),
// its forward and backward time, calls and share of the step, then the total.
void print_scope_table(const compiler::Program& p, const compiler::RunProfile& r, int depth, std::ostream& out);

// A run's step over all its batch shapes, each weighted by the steps it
// trained (`kiln train --profile`): a line per shape (tokens, share of the
// steps, ms per step, planned arena), then the time per step by kernel kind
// (matmul, flash_attention, layer_norm, loop, ...) with its share of the step.
struct WeightedStep {
  const compiler::Program* program = nullptr;
  const compiler::RunProfile* profile = nullptr;
  std::string shape;
  int64_t steps = 0;  // trained with this shape
};
void print_weighted_profile(const std::vector<WeightedStep>& steps, std::ostream& out);

}  // namespace kiln::cli
