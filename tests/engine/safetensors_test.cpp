#include "file_size_limit.h"
#include "side_files.h"
#include "engine/safetensors.h"

#include <doctest/doctest.h>
#include <sys/resource.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <xtensor/xbuilder.hpp>

#include "check_error.h"
#include "sample_tensor.h"
#include "cli/temp_dir.h"
#include "engine/ir/error.h"
#include "text_and_files.h"

using namespace kiln;

namespace {

// A safetensors file written by hand: the header JSON space-padded to a multiple of
// 8 bytes (as Python's safetensors pads it), its length as a little-endian u64, data.
std::string st_file(std::string header, const std::string& data) {
  header.append((8 - header.size() % 8) % 8, ' ');
  std::string out;
  for (int i = 0; i < 8; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

using kiln::test::sample_tensor;

bool same(const Tensor& a, const Tensor& b) {
  return a.type() == b.type() && (a.nbytes() == 0 || std::memcmp(a.data(), b.data(), a.nbytes()) == 0);
}

// The file Python writes for
//   save_file({"a": torch.tensor(7, dtype=torch.int32), "b": torch.tensor([1.0, -2.0]),
//              "c": torch.tensor([True, False, True])}, path, metadata={"format": "pt"})
// spelled out byte by byte: compact JSON, "__metadata__" first, then the tensors by
// dtype (F32, I32, BOOL: descending in safetensors' Dtype enum) and name, offsets
// relative to the data section.
const std::string kPythonHeader =
    R"({"__metadata__":{"format":"pt"},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
    R"("a":{"dtype":"I32","shape":[],"data_offsets":[8,12]},"c":{"dtype":"BOOL","shape":[3],"data_offsets":[12,15]}})";
const std::string kPythonData = std::string("\x00\x00\x80\x3f\x00\x00\x00\xc0", 8) +  // 1.0f, -2.0f
                                std::string("\x07\x00\x00\x00", 4) +                  // 7
                                std::string("\x01\x00\x01", 3);                       // true, false, true

std::map<std::string, Tensor> python_tensors() {
  return {{"a", Tensor(Tensor::I32(7))},
          {"b", Tensor(Tensor::F32{1.0f, -2.0f})},
          {"c", Tensor(Tensor::Bool{true, false, true})}};
}

std::string bytes(std::initializer_list<unsigned char> values) { return std::string(values.begin(), values.end()); }

// Loads `bytes` from a file and expects a kiln::Error naming the file and containing `what`.
void check_rejected(const TempDir& dir, const std::string& bytes, const std::string& what) {
  const std::string path = dir.file("bad.safetensors");
  write_file(path, bytes);
  check_error([&] { load_safetensors(path); }, {path, what});
}

// One F32[2] tensor "x" with the given entry text (the part after "x":).
std::string one_tensor(const std::string& entry, const std::string& data = std::string(8, '\0')) {
  return st_file(R"({"x":)" + entry + "}", data);
}

}  // namespace

TEST_CASE("save_safetensors then load_safetensors gives back every dtype and rank with metadata") {
  TempDir dir;
  std::map<std::string, Tensor> tensors;
  int k = 0;
  for (DType dtype : {DType::f32, DType::i32, DType::boolean, DType::bf16})
    for (const Shape& shape : {Shape{}, Shape{0}, Shape{5}, Shape{2, 3}, Shape{2, 1, 3}})
      tensors.emplace(std::string(dtype_name(dtype)) + "." + std::to_string(k++), sample_tensor(dtype, shape));
  const std::map<std::string, std::string> metadata = {{"format", "kiln-test"}, {"note", "ünïcode \"quoted\""}};
  const std::string path = dir.file("all.safetensors");
  save_safetensors(path, tensors, metadata);

  const SafetensorsFile back = load_safetensors(path);
  CHECK(back.metadata == metadata);
  REQUIRE(back.tensors.size() == tensors.size());
  for (const auto& [name, t] : tensors) {
    CAPTURE(name);
    REQUIRE(back.tensors.count(name) == 1);
    CHECK(same(back.tensors.at(name), t));
  }
  CHECK(load_safetensors_metadata(path) == metadata);
  CHECK(side_files(path).empty());
  // The header is padded so the data section starts 8-byte aligned.
  const std::string bytes = read_file(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<unsigned char>(bytes[i]);
  CHECK(n % 8 == 0);
}

TEST_CASE("a file laid out as Python's safetensors writes it loads and is written back byte for byte") {
  TempDir dir;
  const std::string path = dir.file("python.safetensors");
  const std::string python_bytes = st_file(kPythonHeader, kPythonData);
  write_file(path, python_bytes);
  const SafetensorsFile f = load_safetensors(path);
  CHECK(f.metadata == std::map<std::string, std::string>{{"format", "pt"}});
  const auto expected = python_tensors();
  REQUIRE(f.tensors.size() == 3);
  for (const auto& [name, t] : expected) CHECK(same(f.tensors.at(name), t));

  const std::string ours = dir.file("ours.safetensors");
  save_safetensors(ours, expected, {{"format", "pt"}});
  CHECK(read_file(ours) == python_bytes);
}

TEST_CASE("the reference implementation's own test vectors load and are written back byte for byte") {
  TempDir dir;
  // safetensors/src/tensor.rs test_serialization: "attn.0" F32[1,2,3] = 0..5.
  const std::string attn = bytes(
      {64,  0,  0,   0,  0,   0,  0,   0,   123, 34,  97,  116, 116, 110, 46,  48, 34, 58, 123, 34, 100, 116, 121, 112,
       101, 34, 58,  34, 70,  51, 50,  34,  44,  34,  115, 104, 97,  112, 101, 34, 58, 91, 49,  44, 50,  44,  51,  93,
       44,  34, 100, 97, 116, 97, 95,  111, 102, 102, 115, 101, 116, 115, 34,  58, 91, 48, 44,  50, 52,  93,  125, 125,
       0,   0,  0,   0,  0,   0,  128, 63,  0,   0,   0,   64,  0,   0,   64,  64, 0,  0,  128, 64, 0,   0,   160, 64});
  const std::string path = dir.file("attn.safetensors");
  write_file(path, attn);
  const SafetensorsFile f = load_safetensors(path);
  Tensor::F32 expected = {0.0f, 1.0f, 2.0f, 3.0f, 4.0f, 5.0f};
  expected.reshape({1, 2, 3});
  CHECK(same(f.tensors.at("attn.0"), Tensor(expected)));
  save_safetensors(path, f.tensors, {});
  CHECK(read_file(path) == attn);

  // test_empty: no tensors, no metadata: "{}" padded with 6 spaces.
  const std::string empty = bytes({8, 0, 0, 0, 0, 0, 0, 0, 123, 125, 32, 32, 32, 32, 32, 32});
  write_file(path, empty);
  const SafetensorsFile none = load_safetensors(path);
  CHECK(none.tensors.empty());
  CHECK(none.metadata.empty());
  save_safetensors(path, {}, {});
  CHECK(read_file(path) == empty);
}

TEST_CASE("tensors in any header order and a space-padded header load") {
  TempDir dir;
  const std::string header =
      R"(  {"c":{"shape":[3],"dtype":"BOOL","data_offsets":[12,15]},"a":{"data_offsets":[8,12],"dtype":"I32",)"
      R"("shape":[]},"b":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  check_rejected(dir, st_file(header, kPythonData), "does not start with '{'");  // leading spaces are not allowed
  const std::string path = dir.file("reordered.safetensors");
  write_file(path, st_file(header.substr(2) + std::string(9, ' '), kPythonData));
  const SafetensorsFile f = load_safetensors(path);
  CHECK(f.metadata.empty());
  for (const auto& [name, t] : python_tensors()) CHECK(same(f.tensors.at(name), t));
}

TEST_CASE("every truncation of a valid file is an error naming the file") {
  TempDir dir;
  const std::string good = st_file(kPythonHeader, kPythonData);
  const std::string path = dir.file("cut.safetensors");
  for (size_t len = 0; len < good.size(); ++len) {
    CAPTURE(len);
    write_file(path, good.substr(0, len));
    check_error([&] { load_safetensors(path); }, {path});
  }
}

TEST_CASE("flipped header bytes give an error or a valid file and never anything else") {
  TempDir dir;
  const std::string good = st_file(kPythonHeader, kPythonData);
  const std::string path = dir.file("flipped.safetensors");
  int rejected = 0, accepted = 0;
  for (size_t pos = 0; pos < 8 + kPythonHeader.size(); ++pos) {
    for (unsigned char value : {0x00, 0x22, 0x39, 0x7d, 0xff}) {
      std::string bad = good;
      if (static_cast<unsigned char>(bad[pos]) == value) continue;
      bad[pos] = static_cast<char>(value);
      write_file(path, bad);
      CAPTURE(pos);
      CAPTURE(int(value));
      try {
        const SafetensorsFile f = load_safetensors(path);
        // A flip inside a name or the metadata can still be a valid file: it must
        // then hold the same amount of data.
        size_t bytes = 0;
        for (const auto& [name, t] : f.tensors) bytes += t.nbytes();
        CHECK(bytes == kPythonData.size());
        ++accepted;
      } catch (const Error& e) {
        CHECK(std::string(e.what()).find(path) != std::string::npos);
        ++rejected;
      }
    }
  }
  CHECK(rejected > accepted);  // most flips break the structure
}

TEST_CASE("hostile headers are rejected with the reason and the tensor's name") {
  TempDir dir;
  const std::string f32x2 = R"({"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  check_rejected(dir, std::string("\x07\x00\x00", 3), "shorter than the 8-byte header length");
  check_rejected(dir, std::string("\xff\xff\xff\xff\xff\xff\xff\xff", 8) + "{}", "is over the 100000000 bytes allowed");
  check_rejected(dir, std::string("\x00\xe1\xf5\x05\x00\x00\x00\x00", 8) + "{}", "exceeds the file's remaining");
  check_rejected(dir, st_file("[1,2]", ""), "does not start with '{'");
  check_rejected(dir, st_file(R"({"x":)", ""), "not valid JSON");
  check_rejected(dir, st_file(R"({} trailing)", ""), "not valid JSON");
  check_rejected(dir, st_file("{\"\xff\":1}", ""), "not valid JSON");
  check_rejected(dir, one_tensor("[]"), "tensor 'x': entry is not a JSON object");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[2]})"), "tensor 'x': entry needs");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[0,8],"extra":1})"),
                 "tensor 'x': unexpected key 'extra'");
  check_rejected(dir, one_tensor(R"({"dtype":"F64","shape":[1],"data_offsets":[0,8]})"),
                 "tensor 'x': unsupported dtype \"F64\"");
  check_rejected(dir, one_tensor(R"({"dtype":7,"shape":[2],"data_offsets":[0,8]})"), "unsupported dtype 7");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":2,"data_offsets":[0,8]})"), "shape is not an array");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), "bad dimension -2");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[2.5],"data_offsets":[0,8]})"), "bad dimension 2.5");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[1e30],"data_offsets":[0,8]})"), "bad dimension");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[18446744073709551615],"data_offsets":[0,8]})"),
                 "bad dimension");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,8]})"),
                 "too many elements");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[0,4294967296,4294967296],"data_offsets":[0,0]})", ""),
                 "too many elements");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[4611686018427387904],"data_offsets":[0,8]})"),
                 "needs 4611686018427387904 x 4 bytes");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[3],"data_offsets":[0,8]})"),
                 "tensor 'x': f32[3] needs 3 x 4 bytes but data_offsets [0, 8] hold 8");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})"), "0 <= begin <= end");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[-8,0]})"), "0 <= begin <= end");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"), "0 <= begin <= end");
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[2],"data_offsets":[8,16]})"), "tensor 'x': gap of 8 bytes");
  check_rejected(dir, one_tensor(f32x2, std::string(4, '\0')), "past the data section's 4 bytes");
  check_rejected(dir, one_tensor(f32x2, std::string(9, '\0')), "1 bytes after the last tensor's data");
  check_rejected(dir,
                 st_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                         R"("y":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
                         std::string(8, '\0')),
                 "tensor 'y': data overlaps");
  check_rejected(dir, st_file(R"({"__metadata__":{"k":1}})", ""), "__metadata__ value of 'k' is not a string");
  check_rejected(dir, st_file(R"({"__metadata__":[]})", ""), "__metadata__ is not a JSON object");
  check_rejected(dir, one_tensor(R"({"dtype":"BOOL","shape":[2],"data_offsets":[0,2]})", std::string("\x01\x02", 2)),
                 "tensor 'x': BOOL element 1 is 2");
  check_error([&] { load_safetensors(dir.file("missing.safetensors")); },
              {dir.file("missing.safetensors"), "cannot open"});
  check_error([&] { load_safetensors_metadata(dir.file("missing.safetensors")); }, {"cannot open"});
  std::filesystem::create_directory(dir.file("a_directory"));
  check_error([&] { load_safetensors(dir.file("a_directory")); }, {dir.file("a_directory")});
}

TEST_CASE("a header nested deeper than a safetensors header's three levels is refused before it is parsed") {
  TempDir dir;
  // 20 MB of unclosed brackets: parsed, each would become a JSON value (1.5 GB).
  rusage before{};
  getrusage(RUSAGE_SELF, &before);
  check_rejected(dir, st_file(R"({"x":)" + std::string(20'000'000, '['), ""),
                 "header nests JSON deeper than the 3 levels of a safetensors header, at byte 8");
  rusage after{};
  getrusage(RUSAGE_SELF, &after);
  CHECK(after.ru_maxrss - before.ru_maxrss < 200 * 1024);  // KiB: the file's text, not a parse of it
  check_rejected(dir, one_tensor(R"({"dtype":"F32","shape":[[2]],"data_offsets":[0,8]})"), "safetensors header, at byte 30");

  // Brackets in strings, escaped quotes among them, are no nesting.
  const std::string path = dir.file("brackets.safetensors");
  write_file(path, st_file(R"({"__metadata__":{"k":"[[[\"{{{"},)"
                           R"("[[[{{{":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})",
                           std::string(8, '\0')));
  const SafetensorsFile f = load_safetensors(path);
  CHECK(f.metadata.at("k") == "[[[\"{{{");
  CHECK(f.tensors.count("[[[{{{") == 1);
}

TEST_CASE("a file whose tensors would not fit in memory is refused before any is allocated") {
  TempDir dir;
  const std::string path = dir.file("huge.safetensors");
  // 2^38 bytes of f32 in a sparse file: a valid layout, and more than any test machine holds.
  const uint64_t elements = uint64_t{1} << 36, bytes = elements * 4;
  const std::string header = st_file(R"({"x":{"dtype":"F32","shape":[)" + std::to_string(elements) +
                                         R"(],"data_offsets":[0,)" + std::to_string(bytes) + "]}}",
                                     "");
  write_file(path, header);
  std::filesystem::resize_file(path, header.size() + bytes);
  check_error([&] { load_safetensors(path); },
              {path, "its tensors' data needs " + std::to_string(bytes) + " bytes (256.0 GiB), more than"});
}

TEST_CASE("a failed save leaves the old file intact and no temporary file") {
  TempDir dir;
  const std::string path = dir.file("keep.safetensors");
  save_safetensors(path, python_tensors(), {{"format", "pt"}});
  const std::string before = read_file(path);

  {  // The disk fills up half-way through the write.
    const FileSizeLimit full_disk(100);
    check_error([&] { save_safetensors(path, {{"y", sample_tensor(DType::f32, {400})}}, {}); }, {path, "File too large"});
  }
  CHECK(read_file(path) == before);
  CHECK(side_files(path).empty());

  // Names that cannot be saved.
  check_error(
      [&] {
        save_safetensors(path, {{"__metadata__", sample_tensor(DType::f32, {1})}}, {});
      },
      {"'__metadata__' cannot be a tensor name"});
  check_error([&] { save_safetensors(path, {{"\xff", sample_tensor(DType::f32, {1})}}, {}); }, {"cannot write the header"});
  CHECK(read_file(path) == before);
  CHECK(side_files(path).empty());
  CHECK(same(load_safetensors(path).tensors.at("a"), python_tensors().at("a")));
}
