#pragma once
// A loss curve as a self-contained SVG document (no scripts, no external
// resources): step on x, loss on y, axes with round tick values, one polyline
// per series and a legend. Non-finite points (and any beyond +-1e150) are skipped; series with many
// points are downsampled (at most ~2000 drawn per series); empty input still
// gives a valid, labelled plot.
#include <string>
#include <utility>
#include <vector>

namespace kiln::models {

struct CurveSeries {
  std::string label;                              // e.g. "train", "dev"
  std::vector<std::pair<double, double>> points;  // (step, loss)
  bool right_axis = false;                        // on the right-hand axis (a score, e.g. dev BLEU), dashed
};

// `right_label` names the right-hand axis, drawn when some series is on it.
std::string loss_curve_svg(const std::string& title, const std::vector<CurveSeries>& series,
                           const std::string& right_label = "");

}  // namespace kiln::models
