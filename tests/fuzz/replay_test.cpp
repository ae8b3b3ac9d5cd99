// Replays the corpus of every fuzz target of fuzz_targets.h's table (replay.h).
#include <doctest/doctest.h>

#include "fuzz/fuzz_targets.h"
#include "fuzz/replay.h"

TEST_CASE("every corpus file of every fuzz target is accepted or rejected with a kiln::Error") {
  for (const kiln::fuzz::Target& target : kiln::fuzz::targets()) kiln::fuzz::replay_corpus(target);
}
