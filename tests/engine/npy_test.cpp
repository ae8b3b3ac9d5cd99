#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <sstream>
#include <xtensor/xbuilder.hpp>

#include "sample_tensor.h"
#include "side_files.h"
#include "cli/temp_dir.h"
#include "engine/ir/error.h"
#include "engine/npy.h"
#include "text_and_files.h"

using namespace kiln;
using doctest::Contains;

namespace {

// A .npy file written by hand, independently of the code under test.
std::string npy(const std::string& dict, const std::string& data, char major = 1) {
  const std::string header = dict + "\n";
  std::string out = "\x93NUMPY";
  out += major;
  out += '\0';
  const size_t len_bytes = major == 1 ? 2 : 4;
  for (size_t i = 0; i < len_bytes; ++i) out += static_cast<char>((header.size() >> (8 * i)) & 0xff);
  return out + header + data;
}

std::string dict(const std::string& descr, const std::string& shape, const std::string& fortran = "False") {
  return "{'descr': '" + descr + "', 'fortran_order': " + fortran + ", 'shape': " + shape + ", }";
}

template <class T>
std::string raw(std::initializer_list<T> values) {
  std::string out(values.size() * sizeof(T), '\0');
  std::memcpy(out.data(), std::data(values), out.size());
  return out;
}

using kiln::test::sample_tensor;

}  // namespace

TEST_CASE("save_npy then load_npy gives back every dtype and rank 0..3") {
  TempDir dir;
  for (DType dtype : {DType::f32, DType::i32, DType::boolean}) {
    for (const Shape& shape : {Shape{}, Shape{3}, Shape{2, 3}, Shape{2, 1, 3}}) {
      CAPTURE(type_str({dtype, shape}));
      const Tensor t = sample_tensor(dtype, shape);
      const std::string path = dir.file("t.npy");
      save_npy(path, t);
      const Tensor back = load_npy(path);
      REQUIRE(back.type() == t.type());
      CHECK(std::memcmp(back.data(), t.data(), t.nbytes()) == 0);
    }
  }
}

TEST_CASE("save_npy refuses bf16, which numpy does not have, and leaves no file") {
  TempDir dir;
  const std::string path = dir.file("t.npy");
  CHECK_THROWS_WITH_AS(save_npy(path, Tensor::zeros({DType::bf16, {2}})),
                       "numpy has no bf16: a .npy file holds f32, i32 or bool (cast to f32)", Error);
  CHECK_FALSE(std::filesystem::exists(path));
}

TEST_CASE("the sample tensors hold the values the round trip compares") {
  CHECK(sample_tensor(DType::f32, {2, 3}).f32() == Tensor::F32{{-1.0f, -0.5f, 0.0f}, {0.5f, 1.0f, 1.5f}});
  CHECK(sample_tensor(DType::i32, {3}).i32() == Tensor::I32{-5, 2, 9});
  CHECK(sample_tensor(DType::boolean, {2, 1, 3}).b8() == Tensor::Bool{{{true, false, false}}, {{true, false, false}}});
}

TEST_CASE("save_npy writes the numpy header xtensor and numpy read") {
  TempDir dir;
  save_npy(dir.file("a.npy"), Tensor(Tensor::I32{{1, 2}, {3, 4}}));
  const std::string bytes = read_file(dir.file("a.npy"));
  CHECK(bytes.substr(0, 8) == std::string("\x93NUMPY\x01\x00", 8));
  CHECK(bytes.find("'descr': '<i4'") != std::string::npos);
  CHECK(bytes.find("'shape': (2, 2)") != std::string::npos);
  CHECK(bytes.size() % 16 == 0);  // 16-byte header alignment; 16 data bytes
  CHECK(bytes.substr(bytes.size() - 16) == raw<int32_t>({1, 2, 3, 4}));
}

TEST_CASE("load_npy reads hand-written files: other key orders, version 2.0, and f8/i8 converted") {
  TempDir dir;
  const std::string path = dir.file("h.npy");

  write_file(path, npy("{'shape': (3,), 'fortran_order': False, 'descr': '<i4'}", raw<int32_t>({7, -8, 9})));
  CHECK(load_npy(path).i32() == Tensor::I32{7, -8, 9});

  write_file(path, npy(dict("<f4", "(2,)"), raw<float>({1.5f, -2.0f}), 2));
  CHECK(load_npy(path).f32() == Tensor::F32{1.5f, -2.0f});

  write_file(path, npy(dict("<f8", "(2, 1)"), raw<double>({0.25, -3.5})));
  const Tensor f = load_npy(path);
  CHECK(f.type() == TensorType{DType::f32, {2, 1}});
  CHECK(f.f32().flat(0) == 0.25f);
  CHECK(f.f32().flat(1) == -3.5f);

  write_file(path, npy(dict("<i8", "()"), raw<int64_t>({-2147483648LL})));
  const Tensor i = load_npy(path);
  CHECK(i.type() == TensorType{DType::i32, {}});
  CHECK(i.i32()() == -2147483647 - 1);

  write_file(path, npy(dict("|b1", "(3,)"), std::string("\x01\x00\x01", 3)));
  CHECK(load_npy(path).b8() == Tensor::Bool{true, false, true});
}

TEST_CASE("load_npy rejects bad files with a message naming the file and the problem") {
  TempDir dir;
  const std::string path = dir.file("bad.npy");
  const std::string f4_2x3 = raw<float>({1, 2, 3, 4, 5, 6});
  const struct {
    const char* what;
    std::string bytes;
    const char* message;
  } cases[] = {
      {"empty file", "", "truncated header (not a .npy file)"},
      {"wrong magic", std::string("\x93NUMPZ\x01\x00\x02\x00{}", 12), "not a .npy file (bad magic bytes)"},
      {"text file", "hello, this is not an array\n", "not a .npy file"},
      {"unknown version", npy(dict("<f4", "(2, 3)"), f4_2x3, 9), "unsupported .npy format version 9.0"},
      {"truncated header", npy(dict("<f4", "(2, 3)"), "").substr(0, 30), "truncated header"},
      {"truncated data", npy(dict("<f4", "(2, 3)"), f4_2x3.substr(0, 20)),
       "truncated data: shape [2,3] of '<f4' needs 24 bytes, the file has 20"},
      {"trailing bytes", npy(dict("<f4", "(2, 3)"), f4_2x3 + "xyz"), "unexpected bytes after the data"},
      {"header not a dict", npy("abc", f4_2x3), "bad header: expected '{'"},
      {"missing key", npy("{'descr': '<f4', 'shape': (2, 3)}", f4_2x3), "lacks one of"},
      {"repeated key", npy("{'descr': '<f4', 'descr': '<f4'}", ""), "unexpected or repeated key 'descr'"},
      {"negative dimension", npy(dict("<f4", "(-1,)"), ""), "expected a non-negative integer dimension"},
      {"huge dimension", npy(dict("<f4", "(99999999999999999999,)"), ""), "dimension too large"},
      {"overflowing shape", npy(dict("<f4", "(281474976710656, 281474976710656)"), ""), "has too many elements"},
      {"more elements than bytes", npy(dict("<f4", "(2, 3, 4)"), f4_2x3), "truncated data"},
      {"header length past the end", npy(dict("<f4", "(2, 3)"), f4_2x3, 2).replace(8, 4, "\xf0\xff\xff\xff"),
       "truncated header: its length 4294967280 exceeds the file's remaining"},
      {"fortran order", npy(dict("<f4", "(2, 3)", "True"), f4_2x3), "fortran-order arrays are not supported"},
      {"big-endian", npy(dict(">f4", "(2, 3)"), f4_2x3), "big-endian dtype '>f4' is not supported"},
      {"unsupported dtype", npy(dict("<u2", "(3,)"), "abcdef"), "unsupported dtype '<u2'"},
      {"structured dtype", npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", "abcd"),
       "structured dtypes are not supported"},
      {"bool byte 2", npy(dict("|b1", "(3,)"), std::string("\x01\x02\x00", 3)),
       "element 1 of the bool data is byte 2, not 0 or 1"},
      {"f8 beyond f32", npy(dict("<f8", "(2,)"), raw<double>({1.0, 1e300})), "element 1 of the <f8 data does not fit in f32"},
      {"i8 beyond i32", npy(dict("<i8", "(1,)"), raw<int64_t>({int64_t{1} << 40})),
       "element 0 of the <i8 data (1099511627776) does not fit in i32"},
  };
  for (const auto& c : cases) {
    CAPTURE(c.what);
    write_file(path, c.bytes);
    CHECK_THROWS_WITH_AS(load_npy(path), Contains((path + ": ").c_str()), Error);
    CHECK_THROWS_WITH_AS(load_npy(path), Contains(c.message), Error);
  }
}

TEST_CASE("a .npy header that claims more than the machine's memory is refused before anything is allocated") {
  TempDir dir;
  const std::string path = dir.file("huge.npy");
  write_file(path, npy(dict("<f4", "(100000, 100000, 100)"), raw<float>({1, 2, 3})));
  // Read, the 10^12 elements take 4 bytes in the file and 4 in the tensor.
  const std::string expected =
      path + ": reading shape [100000,100000,100] of '<f4' needs 8000000000000 bytes (7450.6 GiB), more than";
  CHECK_THROWS_WITH_AS(load_npy(path), Contains(expected.c_str()), Error);
}

// Found by fuzz_npy (corpus/npy/crash-zero-size-overflowing-strides): xtensor
// computed the strides of this zero-size shape and overflowed (UBSan).
TEST_CASE("fuzz crash: a zero-size .npy shape whose other dimensions overflow is refused") {
  TempDir dir;
  const std::string path = dir.file("zero.npy");
  const std::string crash = "/tests/fuzz/corpus/npy/crash-zero-size-overflowing-strides";
  write_file(path, read_file(std::string(KILN_SOURCE_DIR) + crash));
  CHECK_THROWS_WITH_AS(load_npy(path), Contains("shape [29,0,195,48,48,191,95,48,48,6,98,48,48,19,8,1] is too large"),
                       Error);
  write_file(path, npy(dict("<f4", "(0, 4294967296, 4294967296)"), ""));
  CHECK_THROWS_WITH_AS(load_npy(path), Contains("the product of its non-zero dimensions overflows"), Error);
}

TEST_CASE("load_npy names a missing file or a directory") {
  TempDir dir;
  CHECK_THROWS_WITH_AS(load_npy(dir.file("none.npy")), Contains("none.npy: cannot open: No such file"), Error);
  CHECK_THROWS_WITH_AS(load_npy(dir.path().string()), Contains("is a directory"), Error);
}

TEST_CASE("load_npy never crashes on a truncated or corrupted file") {
  TempDir dir;
  const std::string path = dir.file("c.npy");
  const std::string good = npy(dict("|b1", "(2, 2)"), std::string("\x01\x00\x00\x01", 4));
  // Every prefix is a truncated file.
  for (size_t n = 0; n < good.size(); ++n) {
    write_file(path, good.substr(0, n));
    CHECK_THROWS_AS(load_npy(path), Error);
  }
  // Every single-byte corruption either still loads a 4-element array or is an Error.
  for (size_t i = 0; i < good.size(); ++i) {
    for (unsigned char b : {0x00, 0x01, 0x0a, 0x27, 0x29, 0x2c, 0x39, 0x7b, 0x80, 0xff}) {
      std::string bad = good;
      bad[i] = static_cast<char>(b);
      write_file(path, bad);
      int64_t numel = 4;
      try {
        numel = load_npy(path).numel();
      } catch (const Error&) {  // any other exception fails the test
      }
      CHECK(numel == 4);
    }
  }
}

TEST_CASE("save_npy replaces a file whole and leaves no temporary behind") {
  TempDir dir;
  const std::string path = dir.file("w.npy");
  save_npy(path, Tensor(Tensor::F32{1.0f, 2.0f, 3.0f}));
  save_npy(path, Tensor(Tensor::I32{4}));
  CHECK(load_npy(path).i32() == Tensor::I32{4});
  CHECK(side_files(path).empty());

  const std::string missing = dir.file("no/such/dir/w.npy");
  CHECK_THROWS_WITH_AS(save_npy(missing, Tensor::scalar(1.0f)), Contains((missing + ": cannot create").c_str()), Error);
  CHECK(side_files(dir.file("w.npy")).empty());
}
