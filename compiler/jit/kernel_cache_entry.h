#pragma once
// The bytes of one kernel cache entry: a magic line, the key's length and the
// key, the object's length and the object, then the FNV-1a checksum of all that
// (lengths and checksum little-endian u64).
#include <optional>
#include <string>
#include <string_view>

namespace kiln::compiler {

std::string encode_cache_entry(std::string_view key, std::string_view object);

// The object of an entry that is whole (magic, lengths and checksum agree) and
// holds exactly `key`; nullopt for anything else, however corrupt.
std::optional<std::string> decode_cache_entry(std::string_view entry, std::string_view key);

}  // namespace kiln::compiler
