#pragma once
// Where a node comes from, kept through every pass (MLIR's loc, XLA's op_name
// metadata): the model scopes it computes part of, and the .kir text that wrote it.
#include <string>
#include <string_view>
#include <vector>

#include "engine/ir/error.h"

namespace kiln {

struct Location {
  // Sorted and unique. A scope is the dotted path of the model part that made the
  // node ("encoder.0.self_attn"); a gradient's nodes carry their forward's scope
  // marked as its backward ("encoder.0.ffn (backward)"). A node that stands for
  // several (a fusion, nodes merged by CSE) has each of theirs.
  std::vector<std::string> scopes;
  SourceLoc source;  // the .kir text's op name; file empty: built in code

  // Adds other's scopes; takes its source if this has none.
  void merge(const Location& other);
  bool operator==(const Location& other) const {
    return scopes == other.scopes && source.file == other.source.file && source.line == other.source.line &&
           source.col == other.source.col;
  }
};

// How reports name a node's origin: "encoder.0.ffn, encoder.0.norm2"; with no
// scope "attention.kir:12:5"; "" when it has neither.
std::string describe(const Location& loc);
// How errors place a node: "in encoder.0.ffn, at attention.kir:12:5", either
// part alone, or "" when it has neither.
std::string origin_phrase(const Location& loc);

// " (backward)": what marks a gradient's scope.
inline constexpr std::string_view kBackwardSuffix = " (backward)";
// "encoder.0.ffn" -> "encoder.0.ffn (backward)"; a backward scope stays as it is.
std::string backward_scope(std::string_view scope);
bool is_backward_scope(std::string_view scope);
// "encoder.0.ffn (backward)" -> "encoder.0.ffn"; a forward scope stays as it is.
std::string_view forward_scope(std::string_view scope);
// The scope a gradient belongs to: each forward scope as its backward.
Location backward_of(const Location& forward);

// The model part a node of several scopes belongs to: their longest common
// dotted prefix ("encoder.0.ffn", "encoder.0.norm2" -> "encoder.0"), backward
// when all of them are; "" when they share nothing or there is no scope.
std::string common_scope(const std::vector<std::string>& scopes);

// The first `depth` dotted parts of a scope, its backward mark kept
// ("encoder.0.ffn (backward)", 2 -> "encoder.0 (backward)"); depth 0: whole.
std::string scope_prefix(std::string_view scope, int depth);

}  // namespace kiln
