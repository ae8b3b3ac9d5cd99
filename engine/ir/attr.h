#pragma once
// Typed node attributes: `{axes=[0,1], keepdims=true, rate=0.1, dtype=f32}` in .kir.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "engine/ir/dtype.h"

namespace kiln {

enum class AttrKind { integer, real, boolean, string, ints, dtype };
std::string_view attr_kind_name(AttrKind k);  // "int", "float", "bool", "string", "int list", "dtype"

using Attr = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, DType>;
AttrKind attr_kind(const Attr& a);

// Canonical text of an attribute value, as the .kir printer writes it. Floats are
// printed in the shortest form that reads back to the same double and always carry
// a '.', an exponent, or are inf/nan, so they never read back as ints.
std::string attr_str(const Attr& a);

// Whether `s` can name an attribute in .kir: a letter or '_', then letters, digits, '_'.
bool is_attr_name(std::string_view s);

// Attributes of one node, kept sorted by name so printing is canonical. Every
// attribute prints as .kir that parses back: set() refuses (kiln::Error naming
// the attribute) a name that is not is_attr_name() and a string that is not UTF-8.
class Attrs {
 public:
  Attrs() = default;
  Attrs(std::initializer_list<std::pair<const std::string, Attr>> init);

  bool has(const std::string& name) const { return map_.count(name) != 0; }
  void set(const std::string& name, Attr value);
  const Attr* find(const std::string& name) const;

  // Typed getters; throw kiln::Error naming the attribute if missing or of another kind.
  int64_t get_int(const std::string& name) const;
  double get_float(const std::string& name) const;  // accepts an int attribute too
  bool get_bool(const std::string& name) const;
  const std::string& get_string(const std::string& name) const;
  const std::vector<int64_t>& get_ints(const std::string& name) const;
  DType get_dtype(const std::string& name) const;

  auto begin() const { return map_.begin(); }
  auto end() const { return map_.end(); }
  bool empty() const { return map_.empty(); }
  // Same names with values of the same kind and text (attr_str): a NaN equals
  // itself and -0.0 differs from 0.0, as in the printed form.
  bool operator==(const Attrs& other) const;

 private:
  std::map<std::string, Attr> map_;
};

}  // namespace kiln
