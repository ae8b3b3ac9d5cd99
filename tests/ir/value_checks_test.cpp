// What a graph declares or makes must be what it can hold: a param's or state's
// `init` is checked where it is declared and by the verifier, with the function
// the run uses (so `kiln check` refuses what `kiln run` would), and a constant whose values do not fit
// its dtype is refused where the node is made, naming it.
#include <doctest/doctest.h>

#include <cmath>

#include "check_error.h"
#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/init_scheme.h"
#include "engine/ir/verifier.h"

using namespace kiln;

namespace {

// The problems of a graph of one declaration: declare()'s refusal, else the verifier's.
std::vector<std::string> problems_of(ValueKind kind, const TensorType& type, Attrs attrs) {
  Graph g("decl");
  try {
    g.add_output(g.declare(kind, "w", type, std::move(attrs)));
  } catch (const Error& e) {
    return {e.what()};
  }
  return verify_problems(g);
}

// A string attribute (a bare "..." would make a bool).
std::string init(const char* scheme) { return scheme; }

}  // namespace

TEST_CASE("a declaration whose init the run would refuse is refused, naming it") {
  const TensorType f32x4{DType::f32, {4}}, i32x2x2{DType::i32, {2, 2}};
  CHECK(problems_of(ValueKind::param, f32x4, {{"init", init("evil")}}) ==
        std::vector<std::string>{"param %w: unknown init \"evil\" (expected \"zeros\", \"ones\", \"glorot\", "
                                 "\"normal\", \"sinusoidal\" or \"load\")"});
  CHECK(problems_of(ValueKind::state, i32x2x2, {{"init", init("glorot")}}) ==
        std::vector<std::string>{"state %w: init \"glorot\" needs f32, the type is i32[2,2]"});
  CHECK(problems_of(ValueKind::param, f32x4, {{"init", init("normal")}, {"std", -1.0}}) ==
        std::vector<std::string>{"param %w: std must be a finite number >= 0"});
  CHECK(problems_of(ValueKind::param, f32x4, {{"init", int64_t{3}}}).size() == 1);
  for (const char* ok : {"zeros", "ones", "normal", "load"})
    CHECK(problems_of(ValueKind::param, f32x4, {{"init", init(ok)}}).empty());
  CHECK(problems_of(ValueKind::param, {DType::f32, {8, 16}}, {{"init", init("sinusoidal")}}).empty());
  // No init: the default is the run's to judge, as a bound value needs none.
  CHECK(problems_of(ValueKind::param, i32x2x2, {}).empty());
  CHECK_THROWS_WITH_AS(init_of({"w", i32x2x2, ValueKind::param, -1, {}}),
                       "init \"glorot\" needs f32, the type is i32[2,2]", Error);
  // An input has no initial value: its attributes are not an init's.
  CHECK(problems_of(ValueKind::input, f32x4, {{"init", init("evil")}}).empty());
}

TEST_CASE("iota refuses indices its dtype cannot hold exactly") {
  Graph g("iota");
  Builder b(g);
  const auto iota = [&](Shape shape, int64_t axis, DType dtype) {
    return b.emit1("iota", {}, {{"shape", shape}, {"axis", axis}, {"dtype", dtype}});
  };
  check_error([&] { iota({3'000'000'000}, 0, DType::i32); },
              {"iota()", "the last index along axis 0, 2999999999, does not fit i32 exactly",
               "(indices up to 2147483647)"});
  check_error([&] { iota({2, (1 << 24) + 2}, -1, DType::f32); },
              {"the last index along axis 1, 16777217, does not fit f32 exactly (indices up to 16777216)"});
  CHECK_NOTHROW(iota({int64_t{1} << 31}, 0, DType::i32));
  CHECK_NOTHROW(iota({(1 << 24) + 1}, 0, DType::f32));
  CHECK_NOTHROW(iota({100'000, 30'000}, 1, DType::i32));  // 3e9 elements, each index small
}

TEST_CASE("fill refuses a value its dtype cannot hold") {
  Graph g("fill");
  Builder b(g);
  const auto fill = [&](double value, DType dtype) {
    return b.emit1("fill", {}, {{"shape", Shape{2}}, {"value", value}, {"dtype", dtype}});
  };
  check_error([&] { fill(1e10, DType::i32); },
              {"fill()", "value 1e+10 does not fit i32 (an integer from -2147483648 to 2147483647)"});
  check_error([&] { fill(0.5, DType::i32); }, {"value 0.5 does not fit i32"});
  check_error([&] { fill(std::nan(""), DType::i32); }, {"value nan does not fit i32"});
  check_error([&] { fill(1e39, DType::f32); },
              {"value 1e+39 does not fit f32 (its largest magnitude is 3.4028235e38)"});
  check_error([&] { fill(2.0, DType::boolean); }, {"value 2.0 does not fit bool (0 or 1)"});
  for (double ok : {-2147483648.0, 2147483647.0, -7.0}) CHECK_NOTHROW(fill(ok, DType::i32));
  for (double ok : {-HUGE_VAL, HUGE_VAL, std::nan(""), 3.4e38, 1e-300}) CHECK_NOTHROW(fill(ok, DType::f32));
  for (double ok : {0.0, 1.0}) CHECK_NOTHROW(fill(ok, DType::boolean));
}
