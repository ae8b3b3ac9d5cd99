#include "engine/npy.h"

#include <bit>
#include <cerrno>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <optional>
#include <string_view>

#include "engine/atomic_file.h"
#include "engine/ir/error.h"
#include "engine/tensor/memory_check.h"

// Writing streams the tensor's bytes behind a header made here (xt::dump_npy
// copies the data twice, through a stringstream). Reading is done here rather than with xt::load_npy,
// which trusts its input: it reads past short headers, sign-extends header-length
// bytes >= 0x80, ignores short data reads and reinterprets any byte as a bool.
// Every check below is one of those, so a bad file is an error, never a crash.
static_assert(std::endian::native == std::endian::little, "the .npy reader assumes a little-endian host");

namespace kiln {
namespace {

namespace fs = std::filesystem;

constexpr std::string_view kMagic = "\x93NUMPY";

struct NpyHeader {
  std::string descr;
  bool fortran_order = false;
  Shape shape;
};

// The header is a Python dict literal, e.g.
//   {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
// padded with spaces and a newline. Keys may come in any order.
class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : s_(text) {}

  NpyHeader parse() {
    NpyHeader h;
    bool seen_descr = false, seen_fortran = false, seen_shape = false;
    expect('{');
    while (!at('}')) {
      const std::string key = quoted("a quoted key");
      expect(':');
      if (key == "descr" && !seen_descr) {
        if (at('[')) fail("structured dtypes are not supported");
        h.descr = quoted("a dtype string");
        seen_descr = true;
      } else if (key == "fortran_order" && !seen_fortran) {
        h.fortran_order = python_bool();
        seen_fortran = true;
      } else if (key == "shape" && !seen_shape) {
        h.shape = int_tuple();
        seen_shape = true;
      } else {
        fail("unexpected or repeated key '" + key + "'");
      }
      if (!at('}')) expect(',');
    }
    expect('}');
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the header dict");
    if (!seen_descr || !seen_fortran || !seen_shape) fail("header lacks one of 'descr', 'fortran_order', 'shape'");
    return h;
  }

 private:
  [[noreturn]] static void fail(const std::string& what) { throw Error("bad header: " + what); }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) ++pos_;
  }
  bool at(char c) {
    skip_space();
    return pos_ < s_.size() && s_[pos_] == c;
  }
  void expect(char c) {
    if (!at(c)) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  std::string quoted(const char* what) {
    skip_space();
    if (pos_ >= s_.size() || (s_[pos_] != '\'' && s_[pos_] != '"')) fail(std::string("expected ") + what);
    const char q = s_[pos_++];
    const size_t end = s_.find(q, pos_);
    if (end == std::string_view::npos) fail("unterminated string");
    std::string out(s_.substr(pos_, end - pos_));
    pos_ = end + 1;
    return out;
  }

  bool python_bool() {
    skip_space();
    for (const auto& [word, value] : {std::pair{std::string_view("True"), true}, {"False", false}})
      if (s_.substr(pos_, word.size()) == word) {
        pos_ += word.size();
        return value;
      }
    fail("fortran_order must be True or False");
  }

  // "()", "(5,)", "(2, 3)": non-negative dimensions.
  Shape int_tuple() {
    Shape shape;
    expect('(');
    while (!at(')')) {
      shape.push_back(dimension());
      if (!at(')')) expect(',');
    }
    expect(')');
    return shape;
  }

  int64_t dimension() {
    constexpr int64_t kMax = int64_t{1} << 48;  // far beyond any real file, far from overflow
    skip_space();
    int64_t v = 0;
    const size_t start = pos_;
    while (pos_ < s_.size() && s_[pos_] >= '0' && s_[pos_] <= '9') {
      v = v * 10 + (s_[pos_++] - '0');
      if (v > kMax) fail("dimension too large");
    }
    if (pos_ == start) fail("expected a non-negative integer dimension");
    return v;
  }

  std::string_view s_;
  size_t pos_ = 0;
};

// How a file's dtype maps to a tensor dtype.
enum class FileDType { f4, i4, b1, f8, i8 };

FileDType parse_descr(const std::string& descr) {
  if (descr == "<f4") return FileDType::f4;
  if (descr == "<i4") return FileDType::i4;
  if (descr == "|b1") return FileDType::b1;
  if (descr == "<f8") return FileDType::f8;
  if (descr == "<i8") return FileDType::i8;
  if (!descr.empty() && descr[0] == '>')
    throw Error("big-endian dtype '" + descr + "' is not supported (save with a '<' dtype)");
  throw Error("unsupported dtype '" + descr + "' (kiln reads <f4, <i4, |b1, and converts <f8, <i8)");
}

DType tensor_dtype(FileDType t) {
  switch (t) {
    case FileDType::f4:
    case FileDType::f8: return DType::f32;
    case FileDType::i4:
    case FileDType::i8: return DType::i32;
    case FileDType::b1: return DType::boolean;
  }
  return DType::f32;
}

size_t file_item_size(FileDType t) {
  switch (t) {
    case FileDType::f4:
    case FileDType::i4: return 4;
    case FileDType::b1: return 1;
    case FileDType::f8:
    case FileDType::i8: return 8;
  }
  return 0;
}

void read_exact(std::istream& in, void* dst, size_t bytes, const char* what) {
  in.read(static_cast<char*>(dst), static_cast<std::streamsize>(bytes));
  if (static_cast<size_t>(in.gcount()) != bytes) throw Error(std::string("truncated ") + what);
}

uint32_t read_le(std::istream& in, size_t bytes) {
  unsigned char b[4] = {};
  read_exact(in, b, bytes, "header");
  uint32_t v = 0;
  for (size_t i = bytes; i-- > 0;) v = (v << 8) | b[i];
  return v;
}

// Reads the magic, version and header of a stream of `size` bytes; leaves `in`
// at the first data byte.
NpyHeader read_header(std::istream& in, size_t size) {
  char magic[6] = {};
  read_exact(in, magic, sizeof magic, "header (not a .npy file)");
  if (std::string_view(magic, sizeof magic) != kMagic) throw Error("not a .npy file (bad magic bytes)");
  const auto major = static_cast<unsigned>(read_le(in, 1));
  const auto minor = static_cast<unsigned>(read_le(in, 1));
  if (major < 1 || major > 3 || minor != 0) {
    std::string msg = "unsupported .npy format version ";
    msg += std::to_string(major);
    msg += '.';
    msg += std::to_string(minor);
    throw Error(msg);
  }
  const uint32_t header_len = read_le(in, major == 1 ? 2 : 4);
  // Checked before the header's buffer is allocated: a 2.0 header may claim 4 GiB.
  const size_t remaining = size - static_cast<size_t>(in.tellg());
  if (header_len > remaining)
    throw Error("truncated header: its length " + std::to_string(header_len) + " exceeds the file's remaining " +
                std::to_string(remaining) + " bytes");
  std::string text(header_len, '\0');
  read_exact(in, text.data(), header_len, "header");
  return HeaderParser(text).parse();
}

// Bytes the data takes in the file. Reading it needs room for the file's
// elements and the tensor's, which is checked against the machine's memory first.
size_t data_bytes(const NpyHeader& h, FileDType t) {
  const auto n = static_cast<uint64_t>(numel(h.shape));
  const std::string what = "reading shape " + shape_str(h.shape) + " of '" + h.descr + "'";
  checked_bytes(n, file_item_size(t) + dtype_size(tensor_dtype(t)), what);
  return n * file_item_size(t);
}

// Reads numel elements stored as `Stored` and converts each with `convert(value, index)`.
template <class T, class Stored, class Convert>
Tensor read_array(std::istream& in, const Shape& shape, Convert convert) {
  auto out = xt::xarray<T>::from_shape(xt_shape(shape));
  std::vector<Stored> raw(out.size());
  read_exact(in, raw.data(), raw.size() * sizeof(Stored), "data");
  for (size_t i = 0; i < raw.size(); ++i) out.flat(i) = convert(raw[i], i);
  return Tensor(std::move(out));
}

// Reads numel elements stored as `Stored` and narrows them with `narrow` (narrow_f64, narrow_i64).
template <class Stored>
Tensor read_narrowed(std::istream& in, const Shape& shape, Tensor (*narrow)(const Stored*, const Shape&)) {
  std::vector<Stored> raw(static_cast<size_t>(numel(shape)));
  read_exact(in, raw.data(), raw.size() * sizeof(Stored), "data");
  return narrow(raw.data(), shape);
}

std::string element_error(size_t index, const std::string& what) {
  std::string msg = "element ";
  msg += std::to_string(index);
  msg += ' ';
  msg += what;
  return msg;
}

Tensor read_data(std::istream& in, FileDType t, const Shape& shape) {
  const auto same = [](auto v, size_t) { return v; };
  switch (t) {
    case FileDType::f4: return read_array<float, float>(in, shape, same);
    case FileDType::i4: return read_array<int32_t, int32_t>(in, shape, same);
    case FileDType::b1:
      return read_array<bool, uint8_t>(in, shape, [](uint8_t v, size_t i) {
        if (v > 1) throw Error(element_error(i, "of the bool data is byte " + std::to_string(v) + ", not 0 or 1"));
        return v == 1;
      });
    case FileDType::f8: return read_narrowed<double>(in, shape, narrow_f64);
    case FileDType::i8: return read_narrowed<int64_t>(in, shape, narrow_i64);
  }
  throw Error("bad dtype");
}

// The stream's size from its end, for the checks against what the header claims
// (the data must fill the rest exactly).
size_t stream_size(std::istream& in) {
  in.seekg(0, std::ios::end);
  const std::streamoff end = in.tellg();
  if (!in || end < 0) throw Error("cannot determine the file size (not a regular file?)");
  in.seekg(0);
  return static_cast<size_t>(end);
}

Tensor read(std::istream& in) {
  const size_t size = stream_size(in);
  const NpyHeader h = read_header(in, size);
  const FileDType t = parse_descr(h.descr);
  if (h.fortran_order) throw Error("fortran-order arrays are not supported (save np.ascontiguousarray(a))");
  const size_t want = data_bytes(h, t);
  const size_t have = size - static_cast<size_t>(in.tellg());
  if (have != want) {
    std::string msg = have < want ? "truncated data: " : "unexpected bytes after the data: ";
    msg += "shape " + shape_str(h.shape);
    msg += " of '" + h.descr;
    msg += "' needs " + std::to_string(want);
    msg += " bytes, the file has " + std::to_string(have);
    throw Error(msg);
  }
  return read_data(in, t, h.shape);
}

// Every error of `read` prefixed with the file's name.
template <class Read>
Tensor named(const std::string& name, Read read) {
  try {
    return read();
  } catch (const Error& e) {
    throw Error(name + ": " + e.what());
  }
}

}  // namespace

Tensor narrow_f64(const double* data, const Shape& shape) {
  auto out = xt::xarray<float>::from_shape(xt_shape(shape));
  for (size_t i = 0; i < out.size(); ++i) {
    if (std::isfinite(data[i]) && std::fabs(data[i]) > FLT_MAX)
      throw Error(element_error(i, "of the <f8 data does not fit in f32"));
    out.flat(i) = static_cast<float>(data[i]);
  }
  return Tensor(std::move(out));
}

Tensor narrow_i64(const int64_t* data, const Shape& shape) {
  auto out = xt::xarray<int32_t>::from_shape(xt_shape(shape));
  for (size_t i = 0; i < out.size(); ++i) {
    if (data[i] < std::numeric_limits<int32_t>::min() || data[i] > std::numeric_limits<int32_t>::max())
      throw Error(element_error(i, "of the <i8 data (" + std::to_string(data[i]) + ") does not fit in i32"));
    out.flat(i) = static_cast<int32_t>(data[i]);
  }
  return Tensor(std::move(out));
}

Tensor load_npy(const std::string& path) {
  return named(path, [&] {
    std::error_code ec;
    if (fs::is_directory(path, ec)) throw Error("is a directory");
    std::ifstream in(path, std::ios::binary);
    if (!in) throw Error(std::string("cannot open: ") + std::strerror(errno));
    return read(in);
  });
}

Tensor read_npy(std::istream& in, const std::string& name) {
  return named(name, [&] { return read(in); });
}

std::string npy_header(const Tensor& t) {
  if (t.dtype() == DType::bf16) throw Error("numpy has no bf16: a .npy file holds f32, i32 or bool (cast to f32)");
  const char* descr = t.dtype() == DType::f32 ? "<f4" : t.dtype() == DType::i32 ? "<i4" : "|b1";
  std::string shape;  // numpy's own spelling: (), (3,), (2, 3)
  for (int64_t d : t.shape()) shape += (shape.empty() ? "" : ", ") + std::to_string(d);
  if (t.shape().size() == 1) shape += ",";
  std::string dict = "{'descr': '";
  dict += descr;
  dict += "', 'fortran_order': False, 'shape': (" + shape + "), }";
  // Version 1.0: magic, version, a 2-byte length; the whole header a multiple of
  // 64 bytes, padded with spaces and ended by a newline.
  const size_t unpadded = kMagic.size() + 4 + dict.size() + 1;
  dict.append((64 - unpadded % 64) % 64, ' ');
  dict += '\n';
  std::string header(kMagic);
  header += '\x01';
  header += '\x00';
  header += static_cast<char>(dict.size() & 0xff);
  header += static_cast<char>(dict.size() >> 8);
  return header + dict;
}

std::string_view tensor_bytes(const Tensor& t) {
  return {static_cast<const char*>(t.data()), t.nbytes()};
}

void save_npy(const std::string& path, const Tensor& t) {
  const std::string header = npy_header(t);
  const std::string_view pieces[] = {header, tensor_bytes(t)};
  write_file_atomically(path, pieces);
}

}  // namespace kiln
