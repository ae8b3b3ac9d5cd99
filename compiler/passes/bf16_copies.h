#pragma once
// The bf16 copies --precision bf16's passes (bf16-matmuls, bf16-saves) make
// while rewriting a graph: one cast per f32 value of the new graph, named
// NAME.bf16, and that copy widened back to f32 (NAME.widened) for a reader that
// may take the rounded value, so that only the copy lives until it.
#include <map>
#include <string>

#include "compiler/passes/rewriter.h"

namespace kiln::compiler {

class Bf16Copies {
 public:
  explicit Bf16Copies(GraphRewriter& rw) : rw_(rw) {}

  // v's copy (v a value of the new graph), emitted while source node `index`
  // is rewritten the first time it is asked for.
  Value of(size_t index, Value v);
  bool has(Value v) const { return copies_.count(v) > 0; }
  // v's copy (made before) widened back to f32, named `name`.widened.
  Value widened(size_t index, Value v, const std::string& name);

 private:
  GraphRewriter& rw_;
  std::map<Value, Value> copies_;
};

}  // namespace kiln::compiler
