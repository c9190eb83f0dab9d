// Files in a project that programs on the host run or obey on their own, without the user asking
// for them: git's (the repository's metadata, attributes, submodules, hook managers), coding
// agents' and editors' settings, hooks and tasks, direnv's .envrc, dev containers. A change the
// sandbox made to one of them is code the host may run: `ss diff` marks it, and `ss apply` brings
// it only with --allow-exec (even with --yes). `review.flag` in config.yaml adds patterns.
//
// Patterns are sync.exclude's (exclude_rules.hpp): "name" matches at any depth, "dir/***" a
// folder and all it holds.
#pragma once

#include <time.h>

#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "exclude_rules.hpp"

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
  // The list and config.yaml's review.flag; for the project (or folder) `dir`, also the folder
  // inside it that its repository's core.hooksPath names (git runs the hooks there: a
  // "hooksPath = .githooks" of the user's makes .githooks/pre-commit code the host runs).
  static HostExecRules From(const Config& config, const std::string& dir = "");

  // Why `path` (relative to the project, '/'-separated) is a file the host obeys, or nullopt:
  // "git" / "Claude Code" / "review.flag 'Makefile'".
  std::optional<std::string> Why(std::string_view path) const;
  // Whether a folder named `name` may hold such files below it: its name is a folder of a
  // pattern (".vscode", ".cargo", "gradle", ...), at any place in it.
  bool MayHold(std::string_view name) const;

 private:
  std::vector<std::pair<ExcludeRules, std::string>> rules_;  // each pattern, with what obeys it
  size_t built_in_ = 0;                                      // the first rules_, BuiltInHostExec's
  // Of the built-in patterns: their last names, literal and with wildcards, and the folders of
  // their "dir/***" ones.
  std::set<std::string> names_, globs_, folders_;
  // The folders' names of every pattern, literal and with wildcards.
  std::set<std::string> holders_, holder_globs_;
  void AddHolders(std::string pattern);
  void Add(const std::string& pattern, std::string what);
};

// A file of the host's project folder `dir` the host runs or obeys, changed (its inode's change
// time) at or after `since`: what a session in a shared folder changed, for the warning at its
// end. In .git: its settings, hooks, info and the settings and hooks of submodules; a .git
// anywhere below the top (another repository, with settings of its own); the top .git replaced.
// A file in a folder that may hold such files (MayHold) and itself changed then (made, renamed,
// moved, its entries changed) counts as changed: a folder renamed into place leaves its files'
// own times as they were. A link among them that leads to a folder counts whenever it is there:
// what it leads to is not looked at.
// node_modules and .git's objects, refs and logs are not walked; links are never followed.
// Whether change time `t` is at or after `since`.
bool AtOrAfter(const struct timespec& t, const struct timespec& since);

struct HostExecChange {
  std::string path;  // relative to `dir`
  std::string what;
  struct timespec changed {};   // its inode's change time (or its folder's, moved into place)
  bool link_to_folder = false;  // a link the host's tools follow to a folder ss does not look in
};
struct HostExecChanges {
  std::vector<HostExecChange> files;  // by path
  size_t cut_at = 0;  // the walk stopped after this many entries (a bound on its time); 0: not
};
HostExecChanges ChangedHostExec(const std::string& dir, const struct timespec& since,
                                const HostExecRules& rules);

}  // namespace ss
