#include "exclude_rules.hpp"

#include <fnmatch.h>

#include "strings.hpp"

namespace ss {

bool IsGitName(std::string_view component) {
  if (component.size() != 4 || component[0] != '.') return false;
  for (size_t i = 1; i < 4; ++i) {
    char c = component[i];
    if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    if (c != "git"[i - 1]) return false;
  }
  return true;
}

ExcludeRules::ExcludeRules(const std::vector<std::string>& patterns) {
  for (const auto& line : patterns) {
    std::string p = line;
    while (!p.empty() && (p.back() == '\r' || p.back() == '\n')) p.pop_back();
    if (p.empty() || p[0] == '#' || p[0] == ';') continue;
    if (p == "!") {
      rules_.clear();
      continue;
    }
    Rule r;
    r.text = p;
    if (p.rfind("- ", 0) == 0 || p.rfind("+ ", 0) == 0) {
      r.include = p[0] == '+';
      p = p.substr(2);
    }
    if (p.size() > 4 && p.compare(p.size() - 4, 4, "/***") == 0) {
      // "dir/***": the folder and everything in it, which is what excluding "dir" does.
      p.resize(p.size() - 4);
    }
    if (p.size() > 1 && p.back() == '/') {
      r.dir_only = true;
      while (p.size() > 1 && p.back() == '/') p.pop_back();
    }
    if (!p.empty() && p[0] == '/') {
      r.anchored = true;
      p = p.substr(p.find_first_not_of('/') == std::string::npos ? p.size()
                                                                 : p.find_first_not_of('/'));
    }
    if (p.empty()) continue;
    r.crosses = p.find("**") != std::string::npos;
    r.whole = r.anchored || r.crosses || p.find('/') != std::string::npos;
    r.pattern = p;
    rules_.push_back(std::move(r));
  }
}

bool ExcludeRules::Matches(const Rule& r, const std::vector<std::string>& parts, size_t n) const {
  int flags = r.crosses ? 0 : FNM_PATHNAME;
  if (!r.whole) return ::fnmatch(r.pattern.c_str(), parts[n - 1].c_str(), flags) == 0;
  // Against the path's end at each component boundary (only the whole path when anchored).
  for (size_t start = 0; start < n; ++start) {
    std::string tail;
    for (size_t i = start; i < n; ++i) tail += (i > start ? "/" : "") + parts[i];
    if (::fnmatch(r.pattern.c_str(), tail.c_str(), flags) == 0) return true;
    if (r.anchored) break;
  }
  return false;
}

std::optional<std::string> ExcludeRules::Why(const std::vector<std::string>& parts,
                                             bool directory) const {
  for (const auto& part : parts) {
    if (IsGitName(part))
      return std::string("in a .git folder (the host's git obeys what it holds)");
  }
  for (size_t n = 1; n <= parts.size(); ++n) {
    bool dir = n < parts.size() || directory;
    for (const auto& r : rules_) {
      if (r.dir_only && !dir) continue;
      if (!Matches(r, parts, n)) continue;
      if (r.include) break;  // the first rule that matches decides: this level is included
      return Cat("excluded by sync.exclude (", Quoted(r.text), ")");
    }
  }
  return std::nullopt;
}

}  // namespace ss
