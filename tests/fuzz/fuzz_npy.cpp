// The .npy reader: an input is read into a tensor that numpy's format, as
// written by save_npy (xt::dump_npy), gives back bit for bit, or is rejected.
#include <cstring>
#include <sstream>
#include <xtensor/xnpy.hpp>

#include "engine/ir/error.h"
#include "engine/npy.h"
#include "fuzz/fuzz_targets.h"

namespace kiln::fuzz {

Outcome fuzz_npy(std::string_view bytes) {
  Tensor t;
  try {
    std::istringstream in{std::string(bytes)};
    t = read_npy(in, "fuzz.npy");
  } catch (const Error&) {
    return Outcome::rejected;
  }
  std::istringstream again{t.visit([](const auto& a) { return xt::dump_npy(a); })};
  const Tensor back = read_npy(again, "rewritten.npy");
  if (!(back.type() == t.type()) || (t.nbytes() > 0 && std::memcmp(back.data(), t.data(), t.nbytes()) != 0))
    throw FuzzFailure("a tensor read from .npy does not round-trip");
  return Outcome::accepted;
}

}  // namespace kiln::fuzz
