#include "engine/ir/parser.h"

#include <algorithm>
#include <charconv>
#include <unordered_map>
#include <utility>

#include "engine/ir/builder.h"
#include "engine/ir/fusion_kind.h"
#include "engine/ir/lexer.h"
#include "engine/ir/op_def.h"
#include "engine/ir/read_file.h"
#include "engine/ir/verifier.h"

namespace kiln {

namespace {

// One `name=value` of an attribute list, with the tokens errors point at.
struct ParsedAttr {
  Token name;
  Token value_start;
  Attr value;
};

// Recursive descent over a grammar whose only nesting is graphs at most two
// deep (a fusion node's body, which holds plain ops, except a horizontal
// fusion's, which holds loop fusions) and an attribute's int list, so every loop
// consumes a token and the recursion depth is bounded.
class Parser {
 public:
  Parser(std::string_view text, const std::string& file) : lex_(text, file) { bump(); }

  Graph parse() {
    if (tok_.kind == TokenKind::end) fail("expected 'graph @name {', got end of file (the file is empty)");
    if (!tok_.is_word("graph")) fail("expected 'graph' at the start of the file, got " + describe(tok_));
    Graph g = parse_graph(false, false);
    if (tok_.kind != TokenKind::end) fail("expected end of file after the graph's closing '}', got " + describe(tok_));
    return g;
  }

 private:
  // What is being parsed: the file's graph or a fusion node's body, each with
  // its own value names.
  struct Scope {
    Graph g = Graph();
    bool body = false;
    bool holds_parts = false;  // a horizontal fusion's body: loop fusions only
    SourceLoc loc;
    std::unordered_map<std::string, int> def_lines;
  };

  // `graph @name { statements }` at the current 'graph' token.
  Graph parse_graph(bool body, bool holds_parts) {
    Scope outer = std::exchange(scope_, Scope{});
    scope_.body = body;
    scope_.holds_parts = holds_parts;
    scope_.loc = loc(tok_);
    bump();
    if (tok_.kind != TokenKind::graph_name)
      fail("expected a graph name like '@main' after 'graph', got " + describe(tok_));
    scope_.g.set_name(tok_.text);
    bump();
    expect('{', "after the graph name");
    while (!tok_.is_punct('}')) {
      if (tok_.kind == TokenKind::end) fail("expected '}' to close graph @" + scope_.g.name() + ", got end of file");
      parse_statement();
    }
    bump();
    check_with_verifier();
    Graph g = std::move(scope_.g);
    scope_ = std::move(outer);
    return g;
  }

  void bump() { tok_ = lex_.next(); }
  SourceLoc loc(const Token& t) const { return lex_.loc(t.line, t.col); }
  [[noreturn]] void fail_at(const Token& t, const std::string& msg) const { throw ParseError(loc(t), msg); }
  [[noreturn]] void fail(const std::string& msg) const { fail_at(tok_, msg); }

  void expect(char c, std::string_view context) {
    if (!tok_.is_punct(c)) {
      std::string msg = "expected '";
      msg += c;
      msg += "' ";
      msg += context;
      fail(msg + ", got " + describe(tok_));
    }
    bump();
  }

  Token take_value_name(std::string_view context) {
    if (tok_.kind != TokenKind::value_name) {
      std::string msg = "expected a value name like '%x' ";
      msg += context;
      fail(msg + ", got " + describe(tok_));
    }
    Token t = tok_;
    bump();
    return t;
  }

  void parse_statement() {
    if (tok_.is_word("input")) return parse_declaration(ValueKind::input);
    if (tok_.is_word("param")) return parse_declaration(ValueKind::param);
    if (tok_.is_word("state")) return parse_declaration(ValueKind::state);
    if (tok_.is_word("output")) return parse_output();
    if (tok_.kind == TokenKind::value_name || tok_.kind == TokenKind::word) return parse_node();
    fail("expected a declaration, a node, 'output' or '}', got " + describe(tok_));
  }

  // input %x : f32[2,3] {init="zeros"}
  void parse_declaration(ValueKind kind) {
    const std::string keyword = tok_.text;
    bump();
    const Token name = take_value_name("after '" + keyword + "'");
    define(name);
    expect(':', "after %" + name.text);
    const TensorType type = parse_type();
    Attrs attrs;
    const Token* init = nullptr;
    std::vector<ParsedAttr> parsed = parse_attrs();
    for (ParsedAttr& a : parsed) {
      if (a.name.text == "init") init = &a.value_start;
      attrs.set(a.name.text, std::move(a.value));
    }
    if (scope_.body && kind != ValueKind::input) fail_at(name, "a fusion body declares inputs only");
    try {  // declare() checks the init as the verifier does: its error points at the attribute
      scope_.g.declare(kind, name.text, type, std::move(attrs));
    } catch (const Error& e) {
      fail_at(init ? *init : name, e.what());
    }
  }

  // output %y
  void parse_output() {
    bump();
    scope_.g.add_output(lookup(take_value_name("after 'output'")));
  }

  // %a, %b = op(%x, %y) {attr=value} : f32[2], f32[3]      or, with no results: op(%x, %y)
  void parse_node() {
    std::vector<Token> names;
    if (tok_.kind == TokenKind::value_name) {
      names.push_back(take_value_name("as a result"));
      define(names.back());
      while (tok_.is_punct(',')) {
        bump();
        names.push_back(take_value_name("after ',' in the result list"));
        define(names.back());
      }
      expect('=', "or ',' after the result names");
    }
    if (tok_.kind != TokenKind::word)
      fail("expected an op name" + std::string(names.empty() ? "" : " after '='") + ", got " + describe(tok_));
    const Token op = tok_;
    const OpDef* def = OpRegistry::global().find(op.text);
    if (!def) fail("unknown op '" + op.text + "'");
    bump();
    expect('(', "after op name '" + op.text + "'");
    std::vector<Value> operands;
    std::vector<TensorType> operand_types;
    if (!tok_.is_punct(')')) {
      for (;;) {
        operands.push_back(lookup(take_value_name("as an operand")));
        operand_types.push_back(scope_.g.type(operands.back()));
        if (!tok_.is_punct(',')) break;
        bump();
      }
    }
    expect(')', "after operands");
    const std::vector<ParsedAttr> given = parse_attrs();
    const Attrs attrs = complete_node_attrs(op, *def, operand_types, given);

    std::vector<std::pair<Token, TensorType>> annotation;
    if (tok_.is_punct(':')) annotation = parse_annotation();
    Location where{parse_scopes(), loc(op)};
    std::shared_ptr<const Graph> body;
    if (scope_.holds_parts && !def->has_body)
      fail_at(op, "a horizontal fusion's body holds loop fusions only, not '" + op.text + "'");
    if (def->has_body) {
      // Errors of a nested fusion name it and point at it, not at the fusion around it.
      const std::string part = names.empty() ? "'" + op.text + "'" : "%" + names.front().text;
      if (scope_.body && !scope_.holds_parts)
        fail_at(op, part + ": a fusion body holds plain ops only, not '" + op.text + "'");
      if (scope_.holds_parts && attrs.get_string("kind") != fusion_kind_name(FusionKind::loop))
        fail_at(op, part + ": a horizontal fusion's body holds loop fusions only, not a fusion of kind '" +
                        attrs.get_string("kind") + "'");
      if (!tok_.is_word("graph")) fail("expected the body 'graph @name {' of op '" + op.text + "', got " + describe(tok_));
      const bool horizontal = attrs.get_string("kind") == fusion_kind_name(FusionKind::horizontal);
      body = std::make_shared<const Graph>(parse_graph(true, horizontal && !scope_.body));
    }

    std::vector<TensorType> types;
    try {
      types = infer_result_types(*def, operand_types, attrs, body.get());
    } catch (const Error& e) {
      fail_at(op, e.what());
    }
    for (const TensorType& t : types) check_size(op, t, "inferred result type");
    if (names.size() != types.size())
      fail_at(names.empty() ? op : names.front(), "op '" + op.text + "' has " + std::to_string(types.size()) +
                                                      " result(s), but " + std::to_string(names.size()) +
                                                      " result name(s) are given");
    if (!annotation.empty()) check_annotation(op, annotation, types);

    std::vector<std::string> result_names;
    for (const Token& n : names) result_names.push_back(n.text);
    scope_.g.add_node(def, std::move(operands), attrs, types, result_names, std::move(body), std::move(where));
  }

  // Completes a node's attributes from its op's schema; errors point at the
  // offending attribute (unknown name, wrong kind) or at the op (missing one).
  Attrs complete_node_attrs(const Token& op, const OpDef& def, const std::vector<TensorType>& operand_types,
                            const std::vector<ParsedAttr>& given) {
    Attrs attrs;
    for (const ParsedAttr& a : given) attrs.set(a.name.text, a.value);
    try {
      return complete_attrs(def, attrs);
    } catch (const Error& e) {
      const std::string msg = op_signature(def.name, operand_types) + ": " + e.what();
      for (const ParsedAttr& a : given) {
        const AttrSpec* spec = nullptr;
        for (const AttrSpec& s : def.attrs)
          if (s.name == a.name.text) spec = &s;
        if (!spec) fail_at(a.name, msg);
        const bool int_for_float = spec->kind == AttrKind::real && attr_kind(a.value) == AttrKind::integer;
        if (attr_kind(a.value) != spec->kind && !int_for_float) fail_at(a.value_start, msg);
      }
      fail_at(op, msg);
    }
  }

  // `: f32[2], f32[3]` after a node, each type with the token it starts at.
  std::vector<std::pair<Token, TensorType>> parse_annotation() {
    bump();
    std::vector<std::pair<Token, TensorType>> types;
    for (;;) {
      const Token at = tok_;
      types.emplace_back(at, parse_type());
      if (!tok_.is_punct(',')) return types;
      bump();
    }
  }

  // The annotation must agree with inference.
  void check_annotation(const Token& op, const std::vector<std::pair<Token, TensorType>>& annotation,
                        const std::vector<TensorType>& inferred) const {
    for (size_t i = 0; i < annotation.size(); ++i) {
      const auto& [at, t] = annotation[i];
      if (i >= inferred.size())
        fail_at(at, "type annotation has more types than op '" + op.text + "' has results (" +
                        std::to_string(inferred.size()) + ")");
      if (!(t == inferred[i]))
        fail_at(at, "type annotation " + type_str(t) + " does not match inferred " + type_str(inferred[i]));
    }
    if (annotation.size() < inferred.size())
      fail_at(annotation.back().first, "expected ',' and the type of result " +
                                           std::to_string(annotation.size() + 1) + " of op '" + op.text + "'");
  }

  // f32[2,3], i32[], bool[1]
  TensorType parse_type() {
    const Token start = tok_;
    if (tok_.kind != TokenKind::word) fail("expected a type like 'f32[2,3]', got " + describe(tok_));
    const std::optional<DType> dtype = parse_dtype(tok_.text);
    if (!dtype) fail("unknown dtype '" + tok_.text + "' (expected f32, i32 or bool)");
    bump();
    expect('[', "after dtype '" + start.text + "'");
    TensorType t{*dtype, {}};
    if (!tok_.is_punct(']')) {
      for (;;) {
        if (tok_.kind != TokenKind::integer)
          fail("expected a dimension (a non-negative integer), got " + describe(tok_));
        const int64_t d = parse_int(tok_);
        if (d < 0) fail("negative dimension " + tok_.text + " in shape");
        t.shape.push_back(d);
        bump();
        if (tok_.is_punct(']')) break;
        if (!tok_.is_punct(',')) fail("expected ',' or ']' in shape, got " + describe(tok_));
        bump();
      }
    }
    bump();
    check_size(start, t, "type");
    return t;
  }

  // Negative dims and element counts beyond int64 never reach inference or kernels.
  void check_size(const Token& at, const TensorType& t, std::string_view what) const {
    for (int64_t d : t.shape)
      if (d < 0) fail_at(at, std::string(what) + " " + type_str(t) + " has a negative dimension");
    try {
      (void)t.numel();
    } catch (const Error& e) {
      fail_at(at, e.what());
    }
  }


  // `{name=value, ...}` if present; names must be unique.
  // An optional `loc("scope", ...)`: the node's model scopes, sorted and unique.
  std::vector<std::string> parse_scopes() {
    std::vector<std::string> scopes;
    if (!tok_.is_word("loc")) return scopes;
    bump();
    expect('(', "after 'loc'");
    for (;;) {
      if (tok_.kind != TokenKind::string) fail("expected a scope name in quotes in loc(...), got " + describe(tok_));
      if (tok_.text.empty()) fail("empty scope name in loc(...)");
      scopes.push_back(tok_.text);
      bump();
      if (!tok_.is_punct(',')) break;
      bump();
    }
    expect(')', "after the scopes in loc(...)");
    std::sort(scopes.begin(), scopes.end());
    scopes.erase(std::unique(scopes.begin(), scopes.end()), scopes.end());
    return scopes;
  }

  std::vector<ParsedAttr> parse_attrs() {
    std::vector<ParsedAttr> out;
    if (!tok_.is_punct('{')) return out;
    bump();
    while (!tok_.is_punct('}')) {
      if (!out.empty()) {
        if (!tok_.is_punct(','))
          fail("expected ',' or '}' after attribute '" + out.back().name.text + "', got " + describe(tok_));
        bump();
      }
      if (tok_.kind != TokenKind::word) fail("expected an attribute name, got " + describe(tok_));
      const Token name = tok_;
      for (const ParsedAttr& a : out)
        if (a.name.text == name.text) fail("duplicate attribute '" + name.text + "'");
      bump();
      expect('=', "after attribute name '" + name.text + "'");
      const Token value_start = tok_;
      out.push_back({name, value_start, parse_attr_value()});
    }
    bump();
    return out;
  }

  Attr parse_attr_value() {
    const Token t = tok_;
    if (t.is_punct('[')) return parse_int_list();
    bump();
    switch (t.kind) {
      case TokenKind::integer:
        return parse_int(t);
      case TokenKind::real:
        return parse_real(t);
      case TokenKind::string:
        return t.text;
      case TokenKind::word:
        if (t.text == "true" || t.text == "false") return t.text == "true";
        if (t.text == "inf" || t.text == "nan") return parse_real(t);
        if (const std::optional<DType> d = parse_dtype(t.text)) return *d;
        break;
      default:
        break;
    }
    fail_at(t, "expected an attribute value (number, true/false, string, int list or dtype), got " + describe(t));
  }

  std::vector<int64_t> parse_int_list() {
    bump();
    std::vector<int64_t> out;
    if (tok_.is_punct(']')) {
      bump();
      return out;
    }
    for (;;) {
      if (tok_.kind != TokenKind::integer) fail("expected an integer in the list, got " + describe(tok_));
      out.push_back(parse_int(tok_));
      bump();
      if (tok_.is_punct(']')) break;
      if (!tok_.is_punct(',')) fail("expected ',' or ']' in the list, got " + describe(tok_));
      bump();
    }
    bump();
    return out;
  }

  int64_t parse_int(const Token& t) const {
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec == std::errc::result_out_of_range) fail_at(t, "integer literal " + t.text + " is out of range for int64");
    if (ec != std::errc() || end != t.text.data() + t.text.size()) fail_at(t, "malformed integer '" + t.text + "'");
    return v;
  }

  double parse_real(const Token& t) const {
    double v = 0;
    const auto [end, ec] = std::from_chars(t.text.data(), t.text.data() + t.text.size(), v);
    if (ec == std::errc::result_out_of_range) fail_at(t, "float literal " + t.text + " is out of range for a double");
    if (ec != std::errc() || end != t.text.data() + t.text.size()) fail_at(t, "malformed float '" + t.text + "'");
    return v;
  }

  void define(const Token& name) {
    const auto [it, inserted] = scope_.def_lines.emplace(name.text, name.line);
    if (!inserted)
      fail_at(name, "value %" + name.text + " is already defined (on line " + std::to_string(it->second) + ")");
  }

  Value lookup(const Token& name) const {
    const std::optional<Value> v = scope_.g.find(name.text);
    if (!v) fail_at(name, "unknown value %" + name.text);
    return *v;
  }

  // The parser has checked each node as it went; the verifier checks what spans
  // nodes (assigns). Its problems name "node N", which maps back to a location.
  void check_with_verifier() const {
    const std::vector<std::string> problems = verify_problems(scope_.g);
    if (problems.empty()) return;
    const std::string& first = problems.front();
    SourceLoc where = scope_.loc;
    const std::string_view prefix = "node ";
    size_t index = 0;
    if (first.rfind(prefix, 0) == 0 &&
        std::from_chars(first.data() + prefix.size(), first.data() + first.size(), index).ec == std::errc() &&
        index < scope_.g.nodes().size())
      where = scope_.g.nodes()[index].loc.source;
    std::string msg = first;
    if (problems.size() > 1) msg += " (and " + std::to_string(problems.size() - 1) + " more problem(s))";
    throw ParseError(where, msg);
  }

  Lexer lex_;
  Token tok_;
  Scope scope_;
};

}  // namespace

Graph parse_kir(std::string_view text, const std::string& filename) { return Parser(text, filename).parse(); }

Graph parse_kir_file(const std::string& path) {
  return parse_kir(read_file(path, kKirFileLimit, "a .kir file"), path);
}

}  // namespace kiln
