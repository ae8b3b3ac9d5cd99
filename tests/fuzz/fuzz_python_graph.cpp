// The Python module's graph building: kiln.parse of some .kir text, then the
// edits a Python user makes (kiln.Graph's name, Builder declarations with
// attributes, ops by name with attributes and result names, outputs), each
// through the C++ call the bindings make (Graph, Builder). A call that fails
// throws kiln::Error and leaves the graph as it was; whatever graph results
// verifies, prints as UTF-8 .kir (Python's str(g)) and parses back to the same
// text, as kiln.parse(str(g)) must.
//
// The bytes: .kir text up to the first NUL (none or empty: kiln.Graph('main')),
// then commands, each a byte choosing the call and then its arguments (Script).
#include <cstring>
#include <iterator>

#include "engine/ir/builder.h"
#include "engine/ir/error.h"
#include "engine/ir/op_def.h"
#include "engine/ir/parser.h"
#include "engine/ir/printer.h"
#include "engine/ir/utf8.h"
#include "engine/ir/verifier.h"
#include "fuzz/fuzz_targets.h"

namespace kiln::fuzz {
namespace {

constexpr std::string_view kFile = "python.kir";

// The commands' arguments, read from the bytes; past their end every read gives 0.
class Script {
 public:
  explicit Script(std::string_view bytes) : bytes_(bytes) {}
  bool done() const { return pos_ >= bytes_.size(); }

  uint8_t byte() { return done() ? 0 : static_cast<uint8_t>(bytes_[pos_++]); }

  // A length byte: below 0x80 one of a few likely names (the fuzzer's way to
  // names that exist), else its low 5 bits count raw bytes (any name at all).
  std::string name() {
    static const char* const kNames[] = {"x", "y", "w", "h.1", "0", "1", "_a", "main", "init", "axes", "dtype"};
    const uint8_t n = byte();
    if (n < 0x80) return kNames[n % std::size(kNames)];
    std::string s;
    for (int i = 0; i < (n & 31); ++i) s += static_cast<char>(byte());
    return s;
  }

  // Small values mostly (dims, axes); 0xff: 8 raw bytes (anything an int64 holds).
  int64_t integer() {
    const uint8_t b = byte();
    if (b != 0xff) return static_cast<int64_t>(b % 20) - 4;
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | byte();
    return static_cast<int64_t>(v);
  }

  double real() {
    uint64_t v = 0;
    for (int i = 0; i < 8; ++i) v = v << 8 | byte();
    double d;
    std::memcpy(&d, &v, sizeof d);
    return d;
  }

  DType dtype() { return static_cast<DType>(byte() % 3); }

  Shape shape() {
    Shape s(byte() % 5);
    for (int64_t& d : s) d = integer();
    return s;
  }

  Attr attr() {
    switch (byte() % 6) {
      case 0: return integer();
      case 1: return real();
      case 2: return byte() % 2 == 1;
      case 3: return name();
      case 4: {
        std::vector<int64_t> ints(byte() % 4);
        for (int64_t& i : ints) i = integer();
        return ints;
      }
      default: return dtype();
    }
  }

  // As Python's **attrs: each name set once more replaces the value (a dict).
  Attrs attrs() {
    Attrs out;
    for (int n = byte() % 4; n > 0; --n) {
      const std::string key = name();
      out.set(key, attr());
    }
    return out;
  }

  Value value(const Graph& g) { return Value{g.num_values() == 0 ? 0 : static_cast<int32_t>(byte() % g.num_values())}; }

 private:
  std::string_view bytes_;
  size_t pos_ = 0;
};

// What any graph the module holds must be: verified, UTF-8 text that parses back to itself.
Graph reparsed(const Graph& g) {
  if (const auto problems = verify_problems(g); !problems.empty())
    throw FuzzFailure("built graph fails verification: " + problems.front());
  const std::string text = print_kir(g);
  if (const auto at = malformed_utf8_at(text))
    throw FuzzFailure("printed graph is not UTF-8 at byte " + std::to_string(*at) + ":\n" + text);
  try {
    Graph parsed = parse_kir(text, "reprint.kir");
    if (print_kir(parsed) != text) throw FuzzFailure("printed graph does not round-trip:\n" + text);
    return parsed;
  } catch (const Error& e) {
    throw FuzzFailure(std::string("printed graph does not parse: ") + e.what() + "\n" + text);
  }
}

// What a failed call must leave as it was (cheap to take after every call).
struct Extent {
  std::string name;
  size_t values, nodes, declarations, outputs;
  bool operator==(const Extent&) const = default;
};
Extent extent(const Graph& g) {
  return {g.name(), g.num_values(), g.nodes().size(), g.declarations().size(), g.outputs().size()};
}

// One command on `g`, as the Python module makes it; kiln::Error for a bad call.
void run_command(Graph& g, Script& s) {
  static const std::vector<const OpDef*> ops = OpRegistry::global().all();
  // Bytes 0-6 pick each call; 7-15 weigh toward the Builder's, since a reparse
  // (5) costs as much as all of them, and the end checks the printed text anyway.
  static constexpr uint8_t kCalls[16] = {0, 1, 2, 3, 4, 5, 6, 1, 1, 2, 2, 2, 2, 2, 3, 4};
  switch (kCalls[s.byte() % 16]) {
    case 0:  // g.name = NAME
      g.set_name(s.name());
      break;
    case 1: {  // b.input / b.param / b.state(NAME, DTYPE, SHAPE, **attrs)
      static constexpr ValueKind kKinds[] = {ValueKind::input, ValueKind::param, ValueKind::state};
      const ValueKind kind = kKinds[s.byte() % 3];
      const std::string name = s.name();
      const TensorType type{s.dtype(), s.shape()};
      g.declare(kind, name, type, s.attrs());
      break;
    }
    case 2: {  // b.OP(*operands, name=NAMES, **attrs), or b.emit('OP', ...) of any name
      const uint8_t pick = s.byte();
      const std::string op = pick < 0xf0 ? ops[pick % ops.size()]->name : s.name();
      std::vector<Value> operands(s.byte() % 4);
      for (Value& v : operands) v = s.value(g);
      const Attrs attrs = s.attrs();
      std::vector<std::string> names(s.byte() % 3);
      for (std::string& n : names) n = s.name();
      Builder(g).emit(op, operands, attrs, names);
      break;
    }
    case 3:  // b.output(VALUE)
      Builder(g).output(s.value(g));
      break;
    case 4: {  // a rename, as the passes make them
      const Value v = s.value(g);
      const std::string name = s.name();
      if (v.id < static_cast<int32_t>(g.num_values())) g.rename(v, name);
      break;
    }
    case 5:  // g = kiln.parse(str(g))
      g = reparsed(g);
      break;
    default:  // g.copy()
      g = Graph(g);
      break;
  }
}

}  // namespace

Outcome fuzz_python_graph(std::string_view bytes) {
  const size_t nul = bytes.find('\0');
  const std::string_view text = bytes.substr(0, nul);
  Script script(nul == std::string_view::npos ? std::string_view() : bytes.substr(nul + 1));
  Graph g;
  if (!text.empty()) {
    try {
      g = parse_kir(text, std::string(kFile));
    } catch (const ParseError& e) {
      if (std::string_view(e.what()).substr(0, kFile.size() + 1) != std::string(kFile) + ":")
        throw FuzzFailure(std::string("parse error not located in the input: ") + e.what());
      return Outcome::rejected;
    }
  }
  Outcome outcome = Outcome::accepted;
  while (!script.done()) {
    const Extent before = extent(g);
    try {
      run_command(g, script);
    } catch (const Error& e) {
      outcome = Outcome::rejected;
      if (!(extent(g) == before)) throw FuzzFailure(std::string("a failed call changed the graph: ") + e.what());
    }
  }
  reparsed(g);
  return outcome;
}

}  // namespace kiln::fuzz
