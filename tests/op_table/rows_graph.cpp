// Rows of the ops that cannot stand alone in a graph of inputs: assign (its
// target must be a param or state: tested through a state update graph) and
// fusion (its results come from a body graph: tested with bodies of the
// shapes the fusion pass builds, loop and input fusion; every other row's
// fused forward check runs the fusion nodes the pass itself makes).
#include <memory>

#include "engine/ir/builder.h"
#include "op_graph.h"
#include "rows.h"
#include "samples.h"

namespace kiln::test {
namespace {

// The input-fusion bodies sum values within [-4, 4]: rows_reduction.cpp's bound.
constexpr Tolerance kSum{1e-4, 1e-5};

// state x0 := wrap(input x1): the run's result is x0's final value.
Graph state_update_graph(const Sample& s, const Wrap& wrap) {
  Graph g("assign");
  Builder b(g);
  const Value target = b.state(operand_name(0), s.operands[0].type());
  b.emit("assign", {target, wrap(b, b.input(operand_name(1), s.operands[1].type()))});
  return g;
}

std::vector<Sample> assign_samples(Rng& rng) {
  std::vector<Sample> out;
  for (DType t : kAll)
    for (int i = 0; i < 3; ++i) {
      const TensorType type{t, random_shape(rng)};
      out.push_back({random_operands(rng, {type, type})});
    }
  Sample special{random_operands(rng, {{DType::f32, {9, 17}}, {DType::f32, {9, 17}}}), {}, "special values"};
  fill_special_values(rng, special.operands[1]);
  out.push_back(std::move(special));
  return out;
}

std::shared_ptr<Graph> body_of(const std::vector<TensorType>& inputs) {
  auto body = std::make_shared<Graph>("body");
  Builder b(*body);
  for (size_t i = 0; i < inputs.size(); ++i) b.input(std::string("p").append(std::to_string(i)), inputs[i]);
  return body;
}

// Loop fusion: two results of the operands' broadcast shape.
std::shared_ptr<const Graph> loop_body(const TensorType& a, const TensorType& c) {
  std::shared_ptr<Graph> body = body_of({a, c});
  Builder b(*body);
  const Value p0 = body->declarations()[0], p1 = body->declarations()[1];
  b.output(b.emit1("mul", {p0, p1}));
  b.output(b.emit1("sub", {b.emit1("maximum", {p0, p1}), p0}));
  return body;
}

// Input fusion: a sum over the last axis reading a product through its generator.
std::shared_ptr<const Graph> reduction_body(const TensorType& a, const TensorType& c) {
  std::shared_ptr<Graph> body = body_of({a, c});
  Builder b(*body);
  const Value product = b.emit1("mul", {body->declarations()[0], body->declarations()[1]});
  b.output(b.emit1("sum", {product}, {{"axes", std::vector<int64_t>{-1}}}));
  return body;
}

std::vector<Sample> fusion_samples(Rng& rng) {
  std::vector<Sample> out;
  for (int i = 0; i < 6; ++i) {
    const TensorType a{DType::f32, random_shape(rng)}, c{DType::f32, broadcast_partner(rng, a.shape)};
    out.push_back({random_operands(rng, {a, c}, Values::moderate), {}, "loop", loop_body(a, c)});
  }
  for (int i = 0; i < 4; ++i) {
    Shape s = random_shape(rng);
    if (s.empty()) s = {17};
    const TensorType a{DType::f32, s}, c{DType::f32, broadcast_partner(rng, s)};
    out.push_back({random_operands(rng, {a, c}, Values::moderate), {{"kind", std::string("input")}, {"hero", int64_t{1}}}, "input",
                   reduction_body(a, c)});
  }
  return out;
}

// Bodies that do not fit their operands, and a fusion with no body.
std::vector<Signature> fusion_invalid() {
  const TensorType v{DType::f32, {2}};
  std::shared_ptr<Graph> no_outputs = body_of({v});
  std::shared_ptr<Graph> with_assign = body_of({v, v});
  // The Builder refuses an assign to an input; a parsed .kir body can still hold one.
  with_assign->add_node(OpRegistry::global().find("assign"), {with_assign->declarations()[0], with_assign->declarations()[1]},
                        {}, {}, {});
  return {{{v}},                                                    // no body
          {{v}, {}, loop_body(v, v)},                               // 2 body inputs, 1 operand
          {{v, {DType::f32, {3}}}, {}, loop_body(v, v)},            // an input of another type
          {{v}, {}, no_outputs},                                    // no outputs
          {{v, v}, {}, with_assign}};                               // a side effect in the body
}

}  // namespace

std::vector<OpInfo> graph_rows() {
  return {{.name = "assign",
           .dtypes = {kAll, kAll},
           .samples = assign_samples,
           .tolerance = kExact,
           .build = state_update_graph,
           .no_fusion = "a side effect, never in a body: the value is written into the target's own memory",
           .no_gradient = "no results: it writes its target when the step ends",
           .invalid = {{{{DType::f32, {2}}, {DType::f32, {3}}}}, {{{DType::f32, {2}}, {DType::i32, {2}}}}}},
          {.name = "fusion",
           .samples = fusion_samples,
           .tolerance = kSum,
           .no_fusion = "it is the fused kernel: no body holds a fusion node",
           .no_gradient = "made by the fusion pass after autodiff, so no graph differentiates through one",
           .invalid = fusion_invalid()}};
}

}  // namespace kiln::test
