// Bad-input checks generated from the op table: from each row's first sample,
// wrong operand counts, every dtype an operand does not accept, an unknown
// attribute, each required attribute missing and each attribute of the wrong
// kind, plus the row's invalid shapes; each must throw a kiln::Error naming the
// op (the Builder's "op(operand types): ..."), never crash.
#include <doctest/doctest.h>

#include <algorithm>

#include "check_error.h"
#include "engine/ir/builder.h"
#include "engine/ir/op_def.h"
#include "op_graph.h"
#include "op_table.h"
#include "rows.h"

using namespace kiln;
using namespace kiln::test;

namespace {


void emit_signature(const std::string& op, const Signature& sig) {
  Graph g("bad_input");
  Builder b(g);
  // An op that writes (assign) writes its first operand, which must be a state.
  const OpDef* def = OpRegistry::global().find(op);
  std::vector<Value> operands;
  for (size_t i = 0; i < sig.operands.size(); ++i)
    operands.push_back(i == 0 && def && def->side_effect ? b.state(operand_name(i), sig.operands[i])
                                                         : b.input(operand_name(i), sig.operands[i]));
  emit_op(b, op, operands, sig.attrs, sig.body);
}

struct Case {
  std::string what;
  Signature sig;
};

Attrs without(const Attrs& attrs, const std::string& name) {
  Attrs out;
  for (const auto& [key, value] : attrs)
    if (key != name) out.set(key, value);
  return out;
}

std::vector<Case> generated_cases(const OpInfo& row, const OpDef& def, const Signature& valid) {
  std::vector<Case> cases;
  if (def.min_operands > 0) {
    Signature sig = valid;
    sig.operands.resize(static_cast<size_t>(def.min_operands) - 1);
    cases.push_back({"too few operands", sig});
  }
  if (def.max_operands >= 0) {
    Signature sig = valid;
    sig.operands.push_back(valid.operands.empty() ? TensorType{DType::f32, {2}} : valid.operands.back());
    cases.push_back({"too many operands", sig});
  }
  for (size_t i = 0; i < valid.operands.size() && !row.dtypes.empty(); ++i) {
    const std::vector<DType>& accepted = row.dtypes[std::min(i, row.dtypes.size() - 1)];
    for (DType d : kEveryDType) {
      if (std::find(accepted.begin(), accepted.end(), d) != accepted.end()) continue;
      Signature sig = valid;
      sig.operands[i].dtype = d;
      cases.push_back({"operand " + std::to_string(i) + " of dtype " + std::string(dtype_name(d)), sig});
    }
  }
  Signature unknown = valid;
  unknown.attrs.set("no_such_attribute", int64_t{1});
  cases.push_back({"an unknown attribute", unknown});
  for (const AttrSpec& spec : def.attrs) {
    if (!spec.default_value) cases.push_back({"attribute " + spec.name + " missing", {valid.operands, without(valid.attrs, spec.name), valid.body}});
    Signature wrong = valid;
    wrong.attrs.set(spec.name, spec.kind == AttrKind::string ? Attr{int64_t{1}} : Attr{std::string("x")});
    cases.push_back({"attribute " + spec.name + " of the wrong kind", wrong});
  }
  return cases;
}

}  // namespace

TEST_CASE("op table: every op rejects bad operands and attributes with an error naming it") {
  for (const OpInfo* row : rows_under_test()) {
    const OpDef* def = OpRegistry::global().find(row->name);
    REQUIRE(def);
    Rng rng = row_rng(*row);
    const Sample first = row->samples(rng).at(0);
    Signature valid{{}, first.attrs, first.body};
    for (const Tensor& t : first.operands) valid.operands.push_back(t.type());
    INFO("op " << row->name);
    CHECK_NOTHROW(emit_signature(row->name, valid));  // so that each error below comes from its change
    std::vector<Case> cases = generated_cases(*row, *def, valid);
    for (const Signature& sig : row->invalid) cases.push_back({"an invalid signature of the row", sig});
    for (const Case& c : cases) {
      INFO(c.what);
      check_error([&] { emit_signature(row->name, c.sig); }, {row->name + "("});
    }
  }
}
