#include "engine/interpreter.h"

#include "engine/ir/error.h"
#include "engine/ir/op_def.h"

namespace kiln {

void Interpreter::execute(std::map<std::string, Tensor>& outputs, std::map<std::string, Tensor>& assigned) {
  std::vector<Tensor> values(graph_.num_values());
  for (Value v : graph_.declarations()) values[static_cast<size_t>(v.id)] = bound_.at(graph_.name_of(v));
  for (const Node& node : graph_.nodes()) {
    if (node.def->side_effect) {  // assign: takes effect when the step ends
      assigned.insert_or_assign(graph_.name_of(node.operands[0]), values[static_cast<size_t>(node.operands[1].id)]);
      continue;
    }
    if (!node.def->reference) throw Error("op '" + node.op() + "' has no reference kernel");
    std::vector<const Tensor*> in;
    bool all_empty = true;
    for (Value v : node.operands) {
      in.push_back(&values[static_cast<size_t>(v.id)]);
      all_empty = all_empty && in.back()->numel() == 0;
    }
    std::vector<Tensor> results;
    for (Value r : node.results) {
      results.push_back(Tensor::zeros(graph_.type(r)));
      all_empty = all_empty && results.back().numel() == 0;
    }
    std::vector<Tensor*> out;
    for (Tensor& t : results) out.push_back(&t);
    // Zero-size results of zero-size operands need no kernel (and xtensor's
    // reducers do pointer arithmetic on the null data of zero-size arrays, which
    // UBSan rejects). Non-empty operands still go through the kernel, which may
    // reject them (e.g. scatter_add's out-of-range indices into a zero-size result).
    if (!all_empty) node.def->reference(KernelArgs{in, out, node.attrs});
    for (size_t i = 0; i < node.results.size(); ++i) {
      const Value r = node.results[i];
      if (!(results[i].type() == graph_.type(r)))
        throw Error("reference kernel of '" + node.op() + "' produced " + type_str(results[i].type()) + " for %" +
                    graph_.name_of(r) + ", expected " + type_str(graph_.type(r)));
      values[static_cast<size_t>(r.id)] = std::move(results[i]);
    }
  }
  for (Value v : graph_.outputs()) outputs.insert_or_assign(graph_.name_of(v), values[static_cast<size_t>(v.id)]);
}

}  // namespace kiln
