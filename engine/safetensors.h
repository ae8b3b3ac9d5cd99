#pragma once
// Tensors in the safetensors format
// (https://github.com/huggingface/safetensors): an 8-byte little-endian u64
// header length N, N bytes of JSON (may be padded with spaces) mapping each
// tensor name to {"dtype", "shape", "data_offsets": [begin, end]} plus an
// optional "__metadata__" string-to-string map, then the raw little-endian
// row-major data, offsets relative to the start of the data section.
//
// Supported dtypes: F32, I32 and BOOL (one byte, 0 or 1). Loading validates
// everything (header length against the file size and the reference limit of
// 100 MB; the header's nesting, at most three levels, before it is parsed, and
// the memory its parse takes against the memory limit; the JSON, dtypes, shapes,
// offsets in range, matching numel * itemsize, not overlapping and covering the
// data with nothing left over, bool bytes, the data's size against the memory
// limit (memory_check.h) before anything is allocated) and
// throws kiln::Error naming the file and, where there is one, the tensor. Saving
// writes atomically (engine/atomic_file.h), so an existing file is never left
// half-written.
#include <istream>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "engine/tensor/tensor.h"

namespace kiln {

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;  // the "__metadata__" map, empty if absent
};

SafetensorsFile load_safetensors(const std::string& path);

// The same from a seekable stream holding a whole file (errors name NAME).
SafetensorsFile read_safetensors(std::istream& in, const std::string& name);

// Reads and validates only the header (the tensors' entries are checked too)
// and returns its "__metadata__" map, without reading the data.
std::map<std::string, std::string> load_safetensors_metadata(const std::string& path);

// Lays the tensors out packed, byte for byte as Python's safetensors does: F32, then
// I32, then BOOL, each group in name order; "__metadata__" first in the compact JSON
// header, which is space-padded to a multiple of 8 bytes. Throws kiln::Error naming
// the file.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata);

// The bytes save_safetensors writes, for writing with other files all or none
// (engine/atomic_file.h): `head` (the header's length, its JSON and padding),
// then each tensor's data, viewed in place (the tensors must outlive it).
struct SafetensorsBytes {
  std::string head;
  std::vector<std::string_view> data;
  std::vector<std::string_view> pieces() const;  // head, then data
};
SafetensorsBytes safetensors_bytes(const std::string& path, const std::map<std::string, Tensor>& tensors,
                                   const std::map<std::string, std::string>& metadata);

}  // namespace kiln
