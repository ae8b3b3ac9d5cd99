#include "engine/safetensors.h"

#include <algorithm>
#include <bit>
#include <cstring>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <tuple>
#include <vector>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/json_nesting.h"
#include "engine/tensor/memory_check.h"

// Tensor data is stored little-endian and copied as is.
static_assert(std::endian::native == std::endian::little, "the safetensors reader assumes a little-endian host");

namespace kiln {
namespace {

using Json = nlohmann::json;

constexpr std::string_view kMetadataKey = "__metadata__";
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit

std::optional<DType> parse_st_dtype(const std::string& s) {
  if (s == "F32") return DType::f32;
  if (s == "I32") return DType::i32;
  if (s == "BOOL") return DType::boolean;
  if (s == "BF16") return DType::bf16;
  return std::nullopt;
}

const char* st_dtype_name(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::i32: return "I32";
    case DType::boolean: return "BOOL";
    case DType::bf16: return "BF16";
  }
  throw Error("safetensors: bad dtype");
}

// One tensor's header entry; offsets are relative to the data section.
struct Entry {
  std::string name;
  TensorType type;
  uint64_t begin = 0, end = 0;
};

struct Header {
  std::vector<Entry> entries;  // sorted by offset
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // file offset of the data section
};

// Reads and validates an open file's header; every message is prefixed with the path.
class HeaderReader {
 public:
  HeaderReader(std::istream& in, const std::string& path) : in_(in), path_(path) {}

  Header read() {
    in_.seekg(0, std::ios::end);
    const std::streamoff end = in_.tellg();
    in_.seekg(0);
    if (!in_ || end < 0) fail("cannot read the file (a directory?)");
    const auto size = static_cast<uint64_t>(end);
    if (size < 8) fail("file is " + std::to_string(size) + " bytes, shorter than the 8-byte header length");
    unsigned char len_bytes[8];
    in_.read(reinterpret_cast<char*>(len_bytes), 8);
    uint64_t n = 0;
    for (int i = 7; i >= 0; --i) n = (n << 8) | len_bytes[i];
    if (n > kMaxHeaderBytes)
      fail("header length " + std::to_string(n) + " is over the " + std::to_string(kMaxHeaderBytes) + " bytes allowed");
    if (n > size - 8)
      fail("header length " + std::to_string(n) + " exceeds the file's remaining " + std::to_string(size - 8) +
           " bytes");
    std::string text(n, '\0');
    if (!in_.read(text.data(), static_cast<std::streamsize>(n))) fail("cannot read the header");
    if (text.empty() || text[0] != '{') fail("header does not start with '{'");

    Header h;
    h.data_start = 8 + n;
    parse(text, h);
    check_layout(h, size - h.data_start);
    try {
      checked_bytes(size - h.data_start, 1, "its tensors' data");
    } catch (const Error& e) {
      fail(e.what());
    }
    return h;
  }

  [[noreturn]] void fail(const std::string& what) const { throw Error(path_ + ": " + what); }
  [[noreturn]] void fail(const std::string& tensor, const std::string& what) const {
    fail("tensor '" + tensor + "': " + what);
  }

 private:
  void parse(const std::string& text, Header& h) const {
    // A header nests three levels: itself, a tensor's entry (or __metadata__),
    // and a shape or data_offsets array (json_nesting.h says why this is first).
    if (const auto at = json_deeper_than(text, 3))
      fail("header nests JSON deeper than the 3 levels of a safetensors header, at byte " + std::to_string(*at));
    try {  // parsed, JSON takes up to 14 times its text's bytes (measured: long arrays, many small objects)
      checked_bytes(text.size(), 16, "parsing the header's " + std::to_string(text.size()) + " bytes of JSON");
    } catch (const Error& e) {
      fail(e.what());
    }
    Json j;
    try {
      j = Json::parse(text);
    } catch (const Json::exception& e) {
      fail(std::string("header is not valid JSON: ") + e.what());
    }
    if (!j.is_object()) fail("header is not a JSON object");
    for (const auto& [name, value] : j.items()) {
      if (name == kMetadataKey)
        h.metadata = metadata(value);
      else
        h.entries.push_back(entry(name, value));
    }
  }

  std::map<std::string, std::string> metadata(const Json& j) const {
    if (!j.is_object()) fail("__metadata__ is not a JSON object");
    std::map<std::string, std::string> out;
    for (const auto& [key, value] : j.items()) {
      if (!value.is_string()) fail("__metadata__ value of '" + key + "' is not a string");
      out[key] = value.get<std::string>();
    }
    return out;
  }

  // A non-negative integer that fits int64.
  std::optional<uint64_t> count(const Json& j) const {
    if (j.is_number_unsigned() && j.get<uint64_t>() <= uint64_t(std::numeric_limits<int64_t>::max()))
      return j.get<uint64_t>();
    if (j.is_number_integer() && j.get<int64_t>() >= 0) return uint64_t(j.get<int64_t>());
    return std::nullopt;
  }

  Entry entry(const std::string& name, const Json& j) const {
    if (!j.is_object()) fail(name, "entry is not a JSON object");
    for (const auto& [key, value] : j.items())
      if (key != "dtype" && key != "shape" && key != "data_offsets") fail(name, "unexpected key '" + key + "'");
    if (!j.contains("dtype") || !j.contains("shape") || !j.contains("data_offsets"))
      fail(name, "entry needs \"dtype\", \"shape\" and \"data_offsets\"");

    Entry e;
    e.name = name;
    const Json& dtype = j["dtype"];
    const auto dt = dtype.is_string() ? parse_st_dtype(dtype.get<std::string>()) : std::nullopt;
    if (!dt) fail(name, "unsupported dtype " + dtype.dump() + " (kiln reads F32, I32 and BOOL)");
    e.type.dtype = *dt;

    const Json& shape = j["shape"];
    if (!shape.is_array()) fail(name, "shape is not an array");
    for (const Json& d : shape) {
      const auto v = count(d);
      if (!v) fail(name, "bad dimension " + d.dump() + " in the shape");
      e.type.shape.push_back(static_cast<int64_t>(*v));
    }

    const Json& offsets = j["data_offsets"];
    std::optional<uint64_t> begin, end;
    if (offsets.is_array() && offsets.size() == 2) begin = count(offsets[0]), end = count(offsets[1]);
    if (!begin || !end || *begin > *end) fail(name, "data_offsets must be [begin, end] with 0 <= begin <= end");
    e.begin = *begin;
    e.end = *end;

    int64_t elements = 0;
    try {
      elements = e.type.numel();
    } catch (const Error&) {
      fail(name, "shape " + shape_str(e.type.shape) + " has too many elements");
    }
    const auto itemsize = static_cast<int64_t>(dtype_size(e.type.dtype));
    if (elements > std::numeric_limits<int64_t>::max() / itemsize || uint64_t(elements * itemsize) != e.end - e.begin)
      fail(name, type_str(e.type) + " needs " + std::to_string(elements) + " x " + std::to_string(itemsize) +
                     " bytes but data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) + "] hold " +
                     std::to_string(e.end - e.begin));
    return e;
  }

  // The tensors must tile the data section exactly: no gaps, overlaps or trailing bytes.
  void check_layout(Header& h, uint64_t data_size) const {
    auto& es = h.entries;
    std::sort(es.begin(), es.end(), [](const Entry& a, const Entry& b) {
      return std::tie(a.begin, a.end, a.name) < std::tie(b.begin, b.end, b.name);
    });
    uint64_t at = 0;
    for (const Entry& e : es) {
      if (e.begin < at) fail(e.name, "data overlaps the previous tensor's");
      if (e.begin > at) fail(e.name, "gap of " + std::to_string(e.begin - at) + " bytes before the data");
      if (e.end > data_size)
        fail(e.name, "data_offsets end " + std::to_string(e.end) + " is past the data section's " +
                         std::to_string(data_size) + " bytes (truncated file?)");
      at = e.end;
    }
    if (at != data_size)
      fail(std::to_string(data_size - at) + " bytes after the last tensor's data (trailing garbage)");
  }

  std::istream& in_;
  const std::string& path_;
};

std::ifstream open_for_reading(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(path + ": cannot open: " + std::strerror(errno));
  return in;
}

Tensor read_tensor(std::istream& in, const Entry& e, uint64_t data_start, const HeaderReader& reader) {
  Tensor t = Tensor::zeros(e.type);
  const size_t nbytes = e.end - e.begin;
  if (nbytes == 0) return t;
  in.seekg(static_cast<std::streamoff>(data_start + e.begin));
  if (e.type.dtype != DType::boolean) {
    if (!in.read(static_cast<char*>(t.data()), static_cast<std::streamsize>(nbytes)))
      reader.fail(e.name, "cannot read the data");
    return t;
  }
  // Any byte other than 0 and 1 is not a bool; copy through a byte buffer.
  std::vector<unsigned char> bytes(nbytes);
  if (!in.read(reinterpret_cast<char*>(bytes.data()), static_cast<std::streamsize>(nbytes)))
    reader.fail(e.name, "cannot read the data");
  bool* out = t.b8().data();
  for (size_t i = 0; i < nbytes; ++i) {
    if (bytes[i] > 1) reader.fail(e.name, "BOOL element " + std::to_string(i) + " is " + std::to_string(bytes[i]));
    out[i] = bytes[i] == 1;
  }
  return t;
}

}  // namespace

SafetensorsFile read_safetensors(std::istream& in, const std::string& name) {
  HeaderReader reader(in, name);
  const Header h = reader.read();
  SafetensorsFile out;
  out.metadata = h.metadata;
  for (const Entry& e : h.entries) out.tensors.emplace(e.name, read_tensor(in, e, h.data_start, reader));
  return out;
}

SafetensorsFile load_safetensors(const std::string& path) {
  std::ifstream in = open_for_reading(path);
  return read_safetensors(in, path);
}

std::map<std::string, std::string> load_safetensors_metadata(const std::string& path) {
  std::ifstream in = open_for_reading(path);
  return HeaderReader(in, path).read().metadata;
}

SafetensorsBytes safetensors_bytes(const std::string& path, const std::map<std::string, Tensor>& tensors,
                                   const std::map<std::string, std::string>& metadata) {
  // Python's safetensors order (descending in its Dtype enum: F32, I32, BF16, BOOL),
  // then by name, so elements stay aligned to their size after the (8-aligned) header.
  std::vector<std::pair<const std::string*, const Tensor*>> order;
  for (const auto& [name, t] : tensors) {
    if (name == kMetadataKey) throw Error(path + ": '__metadata__' cannot be a tensor name");
    order.emplace_back(&name, &t);
  }
  auto rank = [](DType t) { return t == DType::f32 ? 0 : t == DType::i32 ? 1 : t == DType::bf16 ? 2 : 3; };
  std::stable_sort(order.begin(), order.end(),
                   [&](const auto& a, const auto& b) { return rank(a.second->dtype()) < rank(b.second->dtype()); });

  nlohmann::ordered_json header = nlohmann::ordered_json::object();
  if (!metadata.empty()) header[std::string(kMetadataKey)] = metadata;
  SafetensorsBytes out;
  uint64_t at = 0;
  for (const auto& [name, t] : order) {
    const uint64_t nbytes = t->nbytes();
    header[*name] = {{"dtype", st_dtype_name(t->dtype())}, {"shape", t->shape()}, {"data_offsets", {at, at + nbytes}}};
    out.data.emplace_back(static_cast<const char*>(t->data()), nbytes);
    at += nbytes;
  }
  std::string text;
  try {
    text = header.dump();
  } catch (const nlohmann::json::exception& e) {  // names or metadata that are not UTF-8
    throw Error(path + ": cannot write the header: " + e.what());
  }
  text.append((8 - text.size() % 8) % 8, ' ');  // keeps the data section 8-byte aligned
  out.head.assign(8, '\0');
  for (int i = 0; i < 8; ++i) out.head[i] = static_cast<char>((uint64_t(text.size()) >> (8 * i)) & 0xff);
  out.head += text;
  return out;
}

std::vector<std::string_view> SafetensorsBytes::pieces() const {
  std::vector<std::string_view> all{head};
  all.insert(all.end(), data.begin(), data.end());
  return all;
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  write_file_atomically(path, safetensors_bytes(path, tensors, metadata).pieces());
}

}  // namespace kiln
