// The onnx fuzz target's corpus, replayed here rather than in test_fuzz, which
// links the models' sentencepiece (fuzz_targets.h says why).
#include <doctest/doctest.h>

#include "fuzz/replay.h"

TEST_CASE("every corpus file of the onnx fuzz target is accepted or rejected with a kiln::Error") {
  kiln::fuzz::replay_corpus(kiln::fuzz::onnx_target());
}
