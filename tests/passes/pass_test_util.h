#pragma once
// Shared by the pass tests: random bindings, running a graph on the Interpreter,
// comparing results bitwise or within a tolerance, and a generator of random
// graphs with planted simplifiable patterns.
#include <cstdint>
#include <map>
#include <string>

#include "engine/ir/graph.h"
#include "engine/tensor/tensor.h"
#include "ir/random_graph.h"

namespace kiln::test {

// A tensor for every declaration: f32 mostly in [-4, 4] with a few large and tiny
// magnitudes, i32 in [-20, 20], bool fair coins.
std::map<std::string, Tensor> pass_bindings(const Graph& g, Rng& rng);

// What a run of a graph observes: its outputs and the final value of every param and state.
struct Observed {
  std::map<std::string, Tensor> outputs;
  std::map<std::string, Tensor> persistent;
};
Observed run_interpreter(const Graph& g, const std::map<std::string, Tensor>& bindings);

// "" if equal, else the first difference. rel < 0: bitwise; else f32 elements agree
// within abs + rel*|expected|, nan matches nan and infinities must be equal.
std::string compare_observed(const Observed& expected, const Observed& actual, double rel = -1, double abs = 0);

// How many nodes of `op` the graph has.
int count_op(const Graph& g, const std::string& op);

// A graph over f32 inputs with `patterns` planted rewrite opportunities, each a
// fresh chain of nodes: x*1, 1*x, x/1, x+(-0.0), x-0, neg(neg(x)), identity,
// cast to f32, transpose pairs, reshape chains, broadcast chains, (x*a)*b,
// repeated subexpressions, dead nodes and ops of constants; mixed with ordinary
// ops (exp, tanh, add of two values). Its two last values are outputs, and
// optionally a param is assigned.
Graph planted_graph(uint64_t seed, int patterns);

}  // namespace kiln::test
