#include "models/eval/reference_streams.h"

#include "engine/ir/error.h"

namespace kiln::models {

void check_reference_streams(std::string_view metric, size_t hypotheses, const ReferenceStreams& refs) {
  if (refs.empty()) throw Error(std::string(metric) + ": no reference streams");
  for (size_t k = 0; k < refs.size(); ++k)
    if (refs[k].size() != hypotheses)
      throw Error(std::string(metric) + ": " + std::to_string(hypotheses) + " hypotheses but " +
                  std::to_string(refs[k].size()) + " references" +
                  (refs.size() > 1 ? " in reference stream " + std::to_string(k + 1) : ""));
}

}  // namespace kiln::models
