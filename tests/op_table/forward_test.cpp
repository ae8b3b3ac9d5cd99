// Forward checks generated from the op table: each row's samples run on the
// interpreter and the JIT, the op alone (no passes) and wrapped in elementwise
// producers and consumers through the default pipeline (fusion on), at 1 and 2
// threads; a subset also on AVX2 and SSE targets.
#include <doctest/doctest.h>

#include "engine/ir/printer.h"
#include "forward_check.h"
#include "op_graph.h"
#include "op_table.h"

using namespace kiln;
using namespace kiln::test;

TEST_CASE("op table: every op alone and fused matches the interpreter at 1 and 2 threads") {
  for (const OpInfo* row : rows_under_test()) {
    Rng rng = row_rng(*row);
    const std::vector<Sample> samples = row->samples(rng);
    bool fused = false;
    for (size_t i = 0; i < samples.size(); ++i) {
      const Sample& s = samples[i];
      INFO("op " << row->name << ", sample " << i << " " << s.note);
      const Graph alone = sample_graph(*row, s, no_wrap);
      INFO(print_kir(alone));
      CHECK_NOTHROW(check_forward(*row, s, alone, unfused_options()));
      const Graph wrapped = sample_graph(*row, s, unit_wrap());
      CHECK_NOTHROW(fused |= fused_into_kernel(check_forward(*row, s, wrapped, {}), row->name));
    }
    INFO("op " << row->name);
    if (row->no_fusion.empty())
      CHECK_MESSAGE(fused, "no sample's op ended up in a fusion body; if it cannot, say why in no_fusion");
    else
      CHECK_MESSAGE(!fused, "a sample's op was fused, though no_fusion says \"" << row->no_fusion << "\"");
  }
}

TEST_CASE("op table: every op matches the interpreter on AVX2 and SSE targets") {
  constexpr size_t kEvery = 6;  // of each row's samples, the first and every 6th after it
  for (const OpInfo* row : rows_under_test()) {
    Rng rng = row_rng(*row);
    const std::vector<Sample> samples = row->samples(rng);
    for (size_t i = 0; i < samples.size(); i += kEvery)
      for (const char* cpu : {"haswell", "x86-64"}) {
        INFO("op " << row->name << ", sample " << i << " " << samples[i].note << ", target " << cpu);
        const Graph alone = sample_graph(*row, samples[i], no_wrap);
        CHECK_NOTHROW(check_forward(*row, samples[i], alone, unfused_options(cpu)));
      }
  }
}
