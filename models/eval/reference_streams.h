#pragma once
// sacreBLEU's corpus metrics take the hypotheses and one or more reference
// streams: refs[k][i] is the k-th reference of hypothesis i.
#include <string>
#include <string_view>
#include <vector>

namespace kiln::models {

using ReferenceStreams = std::vector<std::vector<std::string>>;

// kiln::Error ("METRIC: ...") unless there is at least one stream and every
// stream has one line per hypothesis.
void check_reference_streams(std::string_view metric, size_t hypotheses, const ReferenceStreams& refs);

}  // namespace kiln::models
