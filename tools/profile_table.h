#pragma once
// The table `kiln profile` and `kiln train --profile` print: one row per kernel
// (its ops, calls, time, share of the step, GFLOP/s and GB/s), with the limit
// it is nearer, the machine's FMA peak or its memory bandwidth (measured here,
// at the profile's thread count), and the share of that limit it reaches.
#include <ostream>

#include "compiler/profile.h"

namespace kiln::cli {

void print_profile_table(const compiler::Program& p, const compiler::RunProfile& r, int threads, std::ostream& out);

}  // namespace kiln::cli
