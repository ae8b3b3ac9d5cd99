#pragma once
// The page of `kiln translate --attention DIR`: one HTML file, its data and
// script inside it, so it opens from the file system with no server or network.
// A sentence chosen from the list shows every attention as a grid of heatmaps
// (a row per layer, a column per head and their mean); a heatmap clicked is
// drawn large with the subword pieces on its axes, and hovering a cell names
// the query piece, the key piece and the weight.
#include <string>
#include <vector>

#include "models/train/attention_maps.h"

namespace kiln::models {

std::string attention_page(const std::vector<SentenceAttention>& sentences);

}  // namespace kiln::models
