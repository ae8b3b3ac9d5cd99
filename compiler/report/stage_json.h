#pragma once
// One stage of a graph's dump (its NN-PASS.kir) as data for the page: the
// declarations, the nodes with their types, origins and .kir text, fusion
// bodies with the body's nodes, and every edge as a reference to what makes
// the value.
#include <string>
#include <unordered_map>
#include <vector>

#include <nlohmann/json.hpp>

namespace kiln::compiler {

// Texts shared by the stages of one graph: a node's .kir statement is stored
// once however many stages hold it unchanged (the page marks what a pass
// changed as the statements its stage has and the one before lacks).
class TextTable {
 public:
  size_t intern(const std::string& text);
  const std::vector<std::string>& texts() const { return texts_; }

 private:
  std::vector<std::string> texts_;
  std::unordered_map<std::string, size_t> index_;
};

// `text`: a graph as print_kir printed it. Throws kiln::Error naming `file`
// if it does not parse.
//   {"decls": [{"name", "kind", "type", "text"}], "nodes": [NODE], "outputs": [[REF, NAME]]}
//   NODE: {"op", "kind" (a fusion's), "outs": [[NAME, TYPE]], "ins": [[REF, NAME]],
//          "scopes": [...], "text", "body": [NODE without body and text]}
//   REF: "d:NAME" a declaration, "nI" top-level node I, "nI.J" node J of I's body
nlohmann::json stage_json(const std::string& text, const std::string& file, TextTable& texts);

}  // namespace kiln::compiler
