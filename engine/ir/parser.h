#pragma once
// Reads the .kir text form into a verified Graph. Ops are looked up in
// OpRegistry::global(), attributes checked against their schemas, result types
// inferred (and checked against any `: type` annotation). Every problem is a
// ParseError "FILE:LINE:COL: error: ..." naming what was expected and what was found.
#include <cstddef>
#include <string>
#include <string_view>

#include "engine/ir/graph.h"

namespace kiln {

Graph parse_kir(std::string_view text, const std::string& filename);

// The most parse_kir_file reads: far beyond any real graph, and a stop for an
// endless input (/dev/zero, a pipe).
constexpr size_t kKirFileLimit = size_t{64} << 20;

// Throws kiln::Error "cannot read FILE: reason" if the file cannot be read, and
// "FILE: larger than the 64 MiB limit for a .kir file" past kKirFileLimit.
Graph parse_kir_file(const std::string& path);

}  // namespace kiln
