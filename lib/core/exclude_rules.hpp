// The paths a crossing never brings to the host, decided on the host: `sync.exclude` (rsync
// patterns, the same list the sandbox's rsync is handed, which root in the sandbox can ignore)
// and, whatever that list says, any `.git` component. rsync's own rules, as rsync applies them
// to a path and every folder above it (an excluded folder excludes all it holds):
//
// - "name" (no '/') matches the last component; "a/b" matches the path's end, at a component
//   boundary; "/a/b" is anchored at the top; a trailing '/' matches folders only;
// - '*' and '?' stop at '/', "[...]" is a class, '**' crosses '/', "dir/***" is dir and all
//   below it;
// - "- PATTERN" excludes, "+ PATTERN" includes (the first rule that matches decides), "!"
//   clears the rules before it; empty lines and lines starting with '#' or ';' are comments.
//
// Where rsync would be finer than this ('**' in a pattern lets every '*' of it cross '/', as
// fnmatch without FNM_PATHNAME does), it excludes more, never less.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

// Whether a component names git's folder: ".git" in any letter case (a case-insensitive host
// file system opens ".GIT" as ".git").
bool IsGitName(std::string_view component);

class ExcludeRules {
 public:
  ExcludeRules() = default;
  explicit ExcludeRules(const std::vector<std::string>& patterns);

  // Why the path made of `parts` (relative, no '..') is excluded, or nullopt: "in a .git
  // folder" or "excluded by sync.exclude ('node_modules')". `directory` says what the last
  // part is; every part before it is a folder.
  std::optional<std::string> Why(const std::vector<std::string>& parts, bool directory) const;

 private:
  struct Rule {
    std::string pattern;  // without its '+ '/'- ', leading and trailing '/'
    std::string text;     // as written, for the message
    bool include = false;
    bool anchored = false;
    bool dir_only = false;
    bool whole = false;    // has a '/' or '**': matched against the path, not the last component
    bool crosses = false;  // has '**'
  };
  bool Matches(const Rule& r, const std::vector<std::string>& parts, size_t n) const;
  std::vector<Rule> rules_;
};

}  // namespace ss
