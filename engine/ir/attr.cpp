#include "engine/ir/attr.h"

#include <charconv>
#include <cmath>

#include "engine/ir/error.h"
#include "engine/ir/utf8.h"

namespace kiln {

std::string_view attr_kind_name(AttrKind k) {
  switch (k) {
    case AttrKind::integer: return "int";
    case AttrKind::real: return "float";
    case AttrKind::boolean: return "bool";
    case AttrKind::string: return "string";
    case AttrKind::ints: return "int list";
    case AttrKind::dtype: return "dtype";
  }
  return "?";
}

AttrKind attr_kind(const Attr& a) { return static_cast<AttrKind>(a.index()); }

static std::string real_str(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

static std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') { out += "\\n"; continue; }
    out += c;
  }
  return out + "\"";
}

std::string attr_str(const Attr& a) {
  switch (attr_kind(a)) {
    case AttrKind::integer: return std::to_string(std::get<int64_t>(a));
    case AttrKind::real: return real_str(std::get<double>(a));
    case AttrKind::boolean: return std::get<bool>(a) ? "true" : "false";
    case AttrKind::string: return quote(std::get<std::string>(a));
    case AttrKind::ints: {
      std::string out = "[";
      const auto& v = std::get<std::vector<int64_t>>(a);
      for (size_t i = 0; i < v.size(); ++i) {
        if (i) out += ',';
        out += std::to_string(v[i]);
      }
      return out + "]";
    }
    case AttrKind::dtype: return std::string(dtype_name(std::get<DType>(a)));
  }
  return "?";
}

bool is_attr_name(std::string_view s) {
  const auto letter = [](char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; };
  if (s.empty() || !letter(s[0])) return false;
  for (char c : s)
    if (!letter(c) && !(c >= '0' && c <= '9')) return false;
  return true;
}

Attrs::Attrs(std::initializer_list<std::pair<const std::string, Attr>> init) {
  for (const auto& [name, value] : init) set(name, value);
}

void Attrs::set(const std::string& name, Attr value) {
  if (!is_attr_name(name))
    throw Error("invalid attribute name '" + name + "' (a letter or '_', then letters, digits, '_')");
  if (const auto* s = std::get_if<std::string>(&value))
    if (const auto at = malformed_utf8_at(*s))
      throw Error("attribute '" + name + "': the string is not UTF-8 (malformed at byte " + std::to_string(*at + 1) +
                  ")");
  map_[name] = std::move(value);
}

bool Attrs::operator==(const Attrs& other) const {
  if (map_.size() != other.map_.size()) return false;
  for (auto a = map_.begin(), b = other.map_.begin(); a != map_.end(); ++a, ++b)
    if (a->first != b->first || attr_kind(a->second) != attr_kind(b->second) || attr_str(a->second) != attr_str(b->second))
      return false;
  return true;
}

const Attr* Attrs::find(const std::string& name) const {
  auto it = map_.find(name);
  return it == map_.end() ? nullptr : &it->second;
}

template <class T>
static const T& get_as(const Attrs& attrs, const std::string& name, AttrKind kind) {
  const Attr* a = attrs.find(name);
  if (!a) throw Error("missing attribute '" + name + "'");
  if (const T* v = std::get_if<T>(a)) return *v;
  throw Error("attribute '" + name + "' must be " + std::string(attr_kind_name(kind)) + ", got " +
              std::string(attr_kind_name(attr_kind(*a))));
}

int64_t Attrs::get_int(const std::string& n) const { return get_as<int64_t>(*this, n, AttrKind::integer); }
double Attrs::get_float(const std::string& n) const {
  const Attr* a = find(n);
  if (a && std::holds_alternative<int64_t>(*a)) return static_cast<double>(std::get<int64_t>(*a));
  return get_as<double>(*this, n, AttrKind::real);
}
bool Attrs::get_bool(const std::string& n) const { return get_as<bool>(*this, n, AttrKind::boolean); }
const std::string& Attrs::get_string(const std::string& n) const {
  return get_as<std::string>(*this, n, AttrKind::string);
}
const std::vector<int64_t>& Attrs::get_ints(const std::string& n) const {
  return get_as<std::vector<int64_t>>(*this, n, AttrKind::ints);
}
DType Attrs::get_dtype(const std::string& n) const { return get_as<DType>(*this, n, AttrKind::dtype); }

}  // namespace kiln
