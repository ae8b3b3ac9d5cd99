#pragma once
// The typed C interface of an AOT-compiled graph, worked out once from the
// graph and shared by the two things that must agree on it: the generated
// header (c_header.h) and the entry function compiled into the object
// (typed_entry.h).
//
//   struct PREFIX_args { one pointer per field };
//   int32_t PREFIX_run(const struct PREFIX_args* args, void* workspace);
//
// Fields, in this order (each a pointer to row-major, contiguous data):
//   inputs, params, state   const T* NAME     read only, in declaration order
//   outputs                 T* NAME           written (an output that is itself
//   a
//                                             declaration is named out_NAME)
//   assigned params/state   T* new_NAME       the value `assign` gives NAME;
//   the
//                                             caller copies it into NAME after
//                                             the run (the graph never writes
//                                             NAME)
// T is float (f32), int32_t (i32) or uint8_t holding 0 or 1 (bool). Value names
// become C identifiers: '.' turns into '_', a leading digit gets a 'v' in
// front, a C or C++ keyword gets a '_' after it.
//
// Buffers of the raw entry (codegen/lower_program.h), by value of the compiled
// graph: a declaration uses its field; a node result uses the first output/new_
// field that shows it, so it is computed in place in the caller's memory; any
// other result lives in the caller's workspace at the offset the memory plan
// gave it (workspace_bytes: the plan's arena).
// Fields showing a value already placed elsewhere are filled by a copy after
// the kernels have run.
#include <cstdint>
#include <string>
#include <vector>

#include "compiler/schedule/program.h"
#include "engine/ir/graph.h"

namespace kiln::compiler {

struct AotField {
  enum class Role { input, param, state, output, assigned };
  std::string name;        // the C member name
  std::string graph_name;  // the graph value it is named after (for new_NAME:
                           // the assign's target)
  Role role;
  Value value;  // the graph value whose data the field holds
};

// Where the raw entry's buffer for a value lives.
struct AotBuffer {
  enum class Place { field, workspace };
  Place place;
  size_t field = 0;     // Place::field: index into fields
  uint64_t offset = 0;  // Place::workspace: byte offset into the workspace
};

// A field whose value's buffer is elsewhere: copied after the run.
struct AotCopy {
  size_t field;
  Value value;
};

struct AotInterface {
  std::string prefix;  // C identifier: PREFIX_run, struct PREFIX_args
  std::vector<AotField> fields;
  std::vector<AotBuffer> buffers;  // by value id
  std::vector<AotCopy> copies;
  uint64_t workspace_bytes = 0;
  static constexpr uint64_t kWorkspaceAlign = 64;
};

// Throws kiln::Error if `prefix` is not a C identifier, or if two fields would
// get the same C name (compared case-insensitively, as the header's upper-case
// constants would clash too), naming both.
// `g` is the compiled graph and `p` its program (pipeline.h).
AotInterface aot_interface(const Graph& g, const Program& p, const std::string& prefix);

bool is_c_identifier(const std::string& s);  // [A-Za-z_][A-Za-z0-9_]* and no keyword

// `name` made into a C identifier as described above ("w1.grad" -> "w1_grad").
std::string c_identifier(const std::string& name);

// `s` in upper case, as the header's macros spell names (c_header.h).
std::string c_macro_case(std::string s);

// The default prefix: the graph's name made into a C identifier.
std::string default_aot_prefix(const Graph& g);

}  // namespace kiln::compiler
