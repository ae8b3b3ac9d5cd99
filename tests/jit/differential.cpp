#include "jit/differential.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "engine/interpreter.h"
#include "engine/npy.h"
#include "engine/param_init.h"
#include "engine/ir/builder.h"
#include "engine/ir/printer.h"

namespace kiln::test {

namespace fs = std::filesystem;

namespace {

float random_float(Rng& rng, Values values) {
  if (values == Values::integers) return static_cast<float>(rng.uniform(-3, 3));
  const double unit = static_cast<double>(rng.next() >> 11) * 0x1.0p-53;  // [0, 1)
  double magnitude = 4.0 * unit;
  if (values != Values::moderate) {
    const int64_t kind = rng.uniform(0, 19);
    if (kind == 0) magnitude = 1e3 * unit;  // large
    if (kind == 1) magnitude = 1e-3 * unit;  // small
  }
  if (values == Values::positive || values == Values::nonzero) magnitude += 1e-3;
  const bool negative = values != Values::positive && rng.coin();
  return static_cast<float>(negative ? -magnitude : magnitude);
}

int32_t random_int(Rng& rng, Values values) {
  if (values == Values::integers) return static_cast<int32_t>(rng.uniform(-3, 3));
  for (;;) {
    const auto v = static_cast<int32_t>(rng.uniform(values == Values::positive ? 1 : -20, 20));
    if (v != 0 || values == Values::any || values == Values::moderate) return v;
  }
}

}  // namespace

Tensor random_tensor(Rng& rng, const TensorType& t, Values values) {
  Tensor out = Tensor::zeros(t);
  switch (t.dtype) {
    case DType::f32:
      for (float& v : out.f32()) v = random_float(rng, values);
      break;
    case DType::i32:
      for (int32_t& v : out.i32()) v = random_int(rng, values);
      break;
    case DType::boolean:
      for (bool& v : out.b8()) v = rng.coin();
      break;
    case DType::bf16:
      for (bfloat16& v : out.bf16()) v = bfloat16(random_float(rng, values));
      break;
  }
  return out;
}

std::map<std::string, Tensor> random_bindings(const Graph& g, Rng& rng, Values values) {
  std::map<std::string, Tensor> bindings;
  for (Value v : g.declarations()) bindings.emplace(g.name_of(v), random_tensor(rng, g.type(v), values));
  return bindings;
}

Graph one_op_graph(const std::string& op, const std::vector<TensorType>& operands, const Attrs& attrs) {
  Graph g(op);
  Builder b(g);
  std::vector<Value> xs;
  for (size_t i = 0; i < operands.size(); ++i) {
    std::string name = "x";
    name += std::to_string(i);
    xs.push_back(b.input(name, operands[i]));
  }
  for (Value r : b.emit(op, xs, attrs)) b.output(r);
  return g;
}

void check_op(const std::string& op, const std::vector<TensorType>& operands, const Attrs& attrs, Tolerance tol,
              Rng& rng, Values values) {
  const Graph g = one_op_graph(op, operands, attrs);
  INFO(print_kir(g));
  check_jit_matches_interpreter(g, random_bindings(g, rng, values), tol);
}

std::string compare_tensors(const Tensor& expected, const Tensor& actual, Tolerance tol, const Tensor* slack) {
  if (!(expected.type() == actual.type()))
    return "type " + type_str(actual.type()) + " differs from expected " + type_str(expected.type());
  const auto mismatch = [](size_t i, auto e, auto a) {
    std::ostringstream os;
    os << std::setprecision(9) << "element " << i << ": expected " << +e << ", got " << +a;
    return os.str();
  };
  const auto n = static_cast<size_t>(expected.numel());
  switch (expected.dtype()) {
    case DType::f32: {
      const float* e = expected.f32().data();
      const float* a = actual.f32().data();
      double largest = 0;
      for (size_t i = 0; i < n; ++i)
        if (std::isfinite(e[i])) largest = std::max(largest, std::fabs(static_cast<double>(e[i])));
      const double room = tol.abs + tol.of_largest * largest;
      const float* extra = slack ? slack->f32().data() : nullptr;
      for (size_t i = 0; i < n; ++i) {
        if (std::isnan(e[i]) && std::isnan(a[i])) continue;
        if (std::isinf(e[i]) || std::isinf(a[i])) {
          if (e[i] != a[i]) return mismatch(i, e[i], a[i]);
          continue;
        }
        const double diff = std::fabs(static_cast<double>(e[i]) - a[i]);
        const double element_slack = extra ? extra[i] : 0.0;
        if (!(diff <= room + tol.rel * std::fabs(e[i]) + element_slack))
          return mismatch(i, e[i], a[i]) + " (the largest |expected| is " + std::to_string(largest) +
                 (extra ? ", the element's slack " + std::to_string(element_slack) : std::string()) + ")";
      }
      return "";
    }
    case DType::i32:
      for (size_t i = 0; i < n; ++i)
        if (expected.i32().data()[i] != actual.i32().data()[i])
          return mismatch(i, expected.i32().data()[i], actual.i32().data()[i]);
      return "";
    case DType::boolean:
      for (size_t i = 0; i < n; ++i)
        if (expected.b8().data()[i] != actual.b8().data()[i])
          return mismatch(i, expected.b8().data()[i], actual.b8().data()[i]);
      return "";
    case DType::bf16: {
      // As f32; values within tolerance before the rounding to bf16 may round
      // apart, by one bf16 step (2^-8 of the value) at most.
      const auto widen = [](const Tensor& t) { return Tensor(Tensor::F32(xt::cast<float>(t.bf16()))); };
      Tolerance wider = tol;
      wider.rel = std::max(tol.rel, 1.0 / 256);
      return compare_tensors(widen(expected), widen(actual), wider, slack);
    }
  }
  return "unknown dtype";
}

void check_jit_matches_interpreter(const Graph& g, const std::map<std::string, Tensor>& bindings, Tolerance tol,
                                   int steps, const compiler::JitOptions& options) {
  Interpreter interp(g);
  compiler::JitExecutable jit(g, options);
  for (const auto& [name, t] : bindings) {
    interp.bind(name, t);
    jit.bind(name, t);
  }
  for (int step = 0; step < steps; ++step) {
    interp.run();
    jit.run();
  }
  for (const std::string& name : interp.output_names()) {
    INFO("output %" << name << " of graph @" << g.name());
    CHECK(compare_tensors(interp.output(name), jit.output(name), tol) == "");
  }
  for (Value v : g.declarations()) {
    if (g.value(v).kind == ValueKind::input) continue;
    INFO("final value of %" << g.name_of(v) << " in graph @" << g.name());
    CHECK(compare_tensors(interp.binding(g.name_of(v)), jit.binding(g.name_of(v)), tol) == "");
  }
}

std::map<std::string, Tensor> example_bindings(const Graph& g, const std::string& name) {
  Interpreter init(g);
  bind_initial_values(init, 0);
  std::map<std::string, Tensor> bindings;
  for (Value v : g.declarations()) {
    const std::string& decl = g.name_of(v);
    if (g.value(v).kind == ValueKind::input)
      bindings.emplace(decl, load_npy((fs::path(KILN_SOURCE_DIR) / "examples/inputs" / name / (decl + ".npy")).string()));
    else
      bindings.emplace(decl, init.binding(decl));
  }
  return bindings;
}

}  // namespace kiln::test
