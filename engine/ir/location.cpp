#include "engine/ir/location.h"

#include <algorithm>

namespace kiln {

void Location::merge(const Location& other) {
  scopes.insert(scopes.end(), other.scopes.begin(), other.scopes.end());
  std::sort(scopes.begin(), scopes.end());
  scopes.erase(std::unique(scopes.begin(), scopes.end()), scopes.end());
  if (source.file.empty()) source = other.source;
}

std::string describe(const Location& loc) {
  if (loc.scopes.empty()) return loc.source.file.empty() ? std::string() : loc.source.str();
  std::string out;
  for (const std::string& s : loc.scopes) out += (out.empty() ? "" : ", ") + s;
  return out;
}

std::string origin_phrase(const Location& loc) {
  std::string out;
  if (!loc.scopes.empty()) {
    out = "in ";
    for (size_t i = 0; i < loc.scopes.size(); ++i) out += (i ? ", " : "") + loc.scopes[i];
  }
  if (!loc.source.file.empty()) out += (out.empty() ? "at " : ", at ") + loc.source.str();
  return out;
}

bool is_backward_scope(std::string_view scope) { return scope.ends_with(kBackwardSuffix); }

std::string backward_scope(std::string_view scope) {
  return is_backward_scope(scope) ? std::string(scope) : std::string(scope) + std::string(kBackwardSuffix);
}

Location backward_of(const Location& forward) {
  Location out{{}, forward.source};
  for (const std::string& s : forward.scopes) out.scopes.push_back(backward_scope(s));
  std::sort(out.scopes.begin(), out.scopes.end());
  out.scopes.erase(std::unique(out.scopes.begin(), out.scopes.end()), out.scopes.end());
  return out;
}

std::string_view forward_scope(std::string_view scope) {
  return is_backward_scope(scope) ? scope.substr(0, scope.size() - kBackwardSuffix.size()) : scope;
}

std::string common_scope(const std::vector<std::string>& scopes) {
  if (scopes.empty()) return {};
  std::string_view prefix = forward_scope(scopes.front());
  bool backward = true;
  for (const std::string& s : scopes) {
    backward = backward && is_backward_scope(s);
    const std::string_view part = forward_scope(s);
    size_t n = 0;
    while (n < prefix.size() && n < part.size() && prefix[n] == part[n]) ++n;
    // Whole dotted parts only: "encoder.1" and "encoder.10" share "encoder".
    const bool at_boundary = (n == prefix.size() || prefix[n] == '.') && (n == part.size() || part[n] == '.');
    if (!at_boundary) {
      const size_t dot = prefix.substr(0, n).rfind('.');
      n = dot == std::string_view::npos ? 0 : dot;
    }
    prefix = prefix.substr(0, n);
  }
  if (prefix.empty()) return {};
  return backward ? backward_scope(prefix) : std::string(prefix);
}

std::string scope_prefix(std::string_view scope, int depth) {
  const std::string_view part = forward_scope(scope);
  if (depth <= 0) return std::string(scope);
  size_t end = 0;
  for (int d = 0; d < depth; ++d) {
    end = part.find('.', d == 0 ? 0 : end + 1);
    if (end == std::string_view::npos) return std::string(scope);
  }
  const std::string head(part.substr(0, end));
  return is_backward_scope(scope) ? backward_scope(head) : head;
}

}  // namespace kiln
