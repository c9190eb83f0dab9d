// Files in a project that programs on the host run or obey on their own, without the user asking
// for them: git's (the repository's metadata, attributes, submodules, hook managers), coding
// agents' and editors' settings, hooks and tasks, direnv's .envrc, dev containers. A change the
// sandbox made to one of them is code the host may run: `ss diff` marks it, and `ss apply` brings
// it only with --allow-exec (even with --yes). `review.flag` in config.yaml adds patterns.
//
// Patterns are sync.exclude's (exclude_rules.hpp): "name" matches at any depth, "dir/***" a
// folder and all it holds.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

class Config;

// The built-in list, each with what obeys it.
struct HostExecPattern {
  std::string pattern;
  std::string what;  // "git", "direnv", "Claude Code", ...
};
const std::vector<HostExecPattern>& BuiltInHostExec();

class HostExecRules {
 public:
  // The built-in list and `extra` (review.flag).
  explicit HostExecRules(std::vector<std::string> extra = {});
  // The list and config.yaml's review.flag.
  static HostExecRules From(const Config& config);

  // Why `path` (relative to the project, '/'-separated) is a file the host obeys, or nullopt:
  // "git" / "Claude Code" / "review.flag 'Makefile'".
  std::optional<std::string> Why(std::string_view path) const;

 private:
  std::vector<std::string> extra_;
};

}  // namespace ss
