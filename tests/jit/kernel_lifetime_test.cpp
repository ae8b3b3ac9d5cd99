// Kernels are held by the executables that use them: the last to go unloads them,
// so a process that compiles graph after graph keeps only its live executables'
// kernels (the compiler fuzzer's long run ran out of memory mappings at 65,530
// after 4,236 graphs when every kernel ever compiled stayed loaded).
#include <doctest/doctest.h>

#include <fstream>
#include <optional>
#include <string>

#include "compiler/jit/jit_engine.h"
#include "compiler/jit_executable.h"
#include "engine/ir/builder.h"
#include "ops/constant.h"
#include "ops/elementwise.h"

using namespace kiln;

namespace {

// x * c + 1: a graph whose kernel differs for every c.
Graph scaled(float c) {
  Graph g("scaled");
  Builder b(g);
  const Value x = b.input("x", {DType::f32, {37}});
  b.output(ops::add(b, ops::mul(b, x, ops::fill(b, {}, c)), ops::fill(b, {}, 1.0)));
  return g;
}

float run_first(compiler::JitExecutable& e) {
  e.bind("x", Tensor(Tensor::F32(xt::xarray<float>::from_shape({37}) * 0.0f + 2.0f)));
  e.run();
  return e.output(e.output_names().front()).f32()(0);
}

size_t mappings() {
  std::ifstream maps("/proc/self/maps");
  size_t n = 0;
  for (std::string line; std::getline(maps, line);) ++n;
  return n;
}

compiler::JitOptions no_disk_cache() {
  compiler::JitOptions o;
  o.kernels.cache = false;
  return o;
}

}  // namespace

TEST_CASE("a kernel stays loaded while an executable holds it and is unloaded with the last") {
  const size_t before = compiler::loaded_kernel_count();
  std::optional<compiler::JitExecutable> a(std::in_place, scaled(3), no_disk_cache());
  const size_t with_a = compiler::loaded_kernel_count();
  CHECK(with_a > before);
  {
    compiler::JitExecutable b(scaled(3), no_disk_cache());  // the same kernels, shared
    CHECK(compiler::loaded_kernel_count() == with_a);
    CHECK(run_first(b) == 7.0f);
  }
  CHECK(compiler::loaded_kernel_count() == with_a);  // a still holds them
  CHECK(run_first(*a) == 7.0f);
  a.reset();
  CHECK(compiler::loaded_kernel_count() == before);
  compiler::JitExecutable again(scaled(3), no_disk_cache());  // loads anew under the same symbols
  CHECK(run_first(again) == 7.0f);
}

TEST_CASE("compiling and dropping many distinct graphs leaves the process's memory mappings as they were") {
  { compiler::JitExecutable warm(scaled(-1), no_disk_cache()); }
  const size_t before = mappings();
  for (int i = 0; i < 100; ++i) {
    compiler::JitExecutable e(scaled(static_cast<float>(i)), no_disk_cache());
    CHECK(run_first(e) == 2.0f * static_cast<float>(i) + 1.0f);
  }
  CHECK(mappings() <= before + 16);
}
