#pragma once
// The reference backend: runs a verified graph node by node with each op's
// xtensor reference kernel, skipping dead nodes (engine/ir/liveness.h) as every
// backend does. Every compiled result is tested against it.
#include "engine/executable.h"

namespace kiln {

class Interpreter : public Executable {
 public:
  explicit Interpreter(Graph graph) : Executable(std::move(graph)) {}

 protected:
  void execute() override;
};

}  // namespace kiln
