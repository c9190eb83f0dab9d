#include "host_exec.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <sys/stat.h>

#include <algorithm>

#include "config.hpp"
#include "exclude_rules.hpp"
#include "fd.hpp"
#include "fs_at.hpp"
#include "strings.hpp"

namespace ss {

const std::vector<HostExecPattern>& BuiltInHostExec() {
  static const std::vector<HostExecPattern> list = {
      // git: the repository's metadata never crosses; these select drivers and repositories.
      {".git", "git"},
      {".gitattributes", "git (attributes pick filter and diff programs)"},
      {".gitmodules", "git (submodules)"},
      {".gitconfig", "git"},
      // A folder with HEAD, objects and refs is a repository, wherever it is: git obeys its
      // config (core.fsmonitor) when a prompt or an editor looks there.
      {"HEAD", "git (a repository's HEAD: git obeys the config beside it)"},
      // Other version control a prompt or an editor may run in the folder.
      {".hg/***", "Mercurial (hooks in .hg/hgrc)"},
      {".jj/***", "Jujutsu (the repository's config names programs)"},
      {".pre-commit-config.yaml", "pre-commit"},
      {".husky/***", "husky (git hooks)"},
      {"lefthook.yml", "lefthook (git hooks)"},
      {".lefthook.yml", "lefthook (git hooks)"},
      {"lefthook-local.yml", "lefthook (git hooks)"},
      {".envrc", "direnv"},
      {".env", "dotenv loaders (variables such as NODE_OPTIONS name programs)"},
      {".env.*", "dotenv loaders (variables such as NODE_OPTIONS name programs)"},
      {"mise.toml", "mise (tasks, hooks)"},
      {".mise.toml", "mise (tasks, hooks)"},
      {"mise.*.toml", "mise (tasks, hooks)"},
      {".mise.*.toml", "mise (tasks, hooks)"},
      {".mise/***", "mise (tasks, hooks)"},
      {"mise/***", "mise (tasks, hooks)"},
      {".config/mise.toml", "mise (tasks, hooks)"},
      {".config/mise/***", "mise (tasks, hooks)"},
      {".tool-versions", "asdf and mise (plugins run programs)"},
      {".lfsconfig", "git-lfs"},
      {".npmrc", "npm (script-shell, node-options)"},
      {".yarnrc", "Yarn 1 (yarn-path runs a program)"},
      {".yarnrc.yml", "Yarn (yarnPath runs a program)"},
      {".pnpmfile.cjs", "pnpm (hooks)"},
      {".pnpmfile.mjs", "pnpm (hooks)"},
      {"bunfig.toml", "Bun (preload runs code)"},
      {".cargo/config.toml", "Cargo (build wrappers)"},
      {".cargo/config", "Cargo (build wrappers)"},
      {"rust-toolchain.toml", "rustup (a toolchain path runs its programs)"},
      {"rust-toolchain", "rustup (a toolchain path runs its programs)"},
      {".venv/bin/python*", "Python environments (editors run their interpreter)"},
      {"venv/bin/python*", "Python environments (editors run their interpreter)"},
      {".venv/pyvenv.cfg", "Python environments (editors run their interpreter)"},
      {"venv/pyvenv.cfg", "Python environments (editors run their interpreter)"},
      // Coding agents: hooks, commands, MCP servers they start.
      {".claude/***", "Claude Code (hooks, commands)"},
      {".mcp.json", "MCP clients (servers they start)"},
      {".gemini/***", "Gemini CLI"},
      {".codex/***", "Codex CLI"},
      {"opencode.json", "opencode (plugins, MCP servers)"},
      {".opencode/***", "opencode"},
      {".cursor/***", "Cursor"},
      {".kiro/***", "Kiro (hooks, MCP servers)"},
      {".roo/***", "Roo Code (MCP servers)"},
      {".amazonq/***", "Amazon Q (MCP servers)"},
      {".aider.conf.yml", "aider (lint and test commands)"},
      // Editors and IDEs: tasks run on opening a folder, settings naming programs.
      {".vscode/***", "VS Code (tasks, settings)"},
      {".devcontainer/***", "dev containers (initializeCommand runs on the host)"},
      {".idea/***", "JetBrains IDEs (run configurations, file watchers)"},
      {".zed/***", "Zed (tasks)"},
      {".helix/***", "Helix (language servers it starts)"},
      {".nvim.lua", "Neovim (exrc)"},
      {".exrc", "Vim and Neovim (exrc)"},
      {".vimrc", "Vim (exrc)"},
      {".dir-locals.el", "Emacs (eval in directory variables)"},
      {".dir-locals-2.el", "Emacs (eval in directory variables)"},
      // Linters and formatters whose configuration is code, loaded by editors' extensions on
      // their own.
      {"eslint.config.*", "ESLint (its configuration is code editors run)"},
      {".eslintrc.js", "ESLint (its configuration is code editors run)"},
      {".eslintrc.cjs", "ESLint (its configuration is code editors run)"},
      {"prettier.config.*", "Prettier (its configuration is code editors run)"},
      {".prettierrc.js", "Prettier (its configuration is code editors run)"},
      {".prettierrc.cjs", "Prettier (its configuration is code editors run)"},
      {".prettierrc.mjs", "Prettier (its configuration is code editors run)"},
  };
  return list;
}

HostExecRules::HostExecRules(std::vector<std::string> extra) {
  // Each pattern is read once here, not at every path a walk meets.
  // In any letter case: a case-insensitive file system (macOS's, by default) opens .ENVRC as
  // .envrc.
  for (const auto& [pattern, what] : BuiltInHostExec()) {
    std::string p = ToLower(pattern);
    rules_.push_back({ExcludeRules({p}), what});
    // The quick test's names: the last of each pattern (literal, or with wildcards), or the
    // folder of a "dir/***" one.
    if (p.ends_with("/***")) {
      p.resize(p.size() - 4);
      folders_.insert(p.substr(p.rfind('/') + 1));
    } else {
      std::string last = p.substr(p.rfind('/') + 1);
      (last.find_first_of("*?[") == std::string::npos ? names_ : globs_).insert(last);
    }
  }
  built_in_ = rules_.size();
  for (const std::string& pattern : extra) {
    rules_.push_back({ExcludeRules({ToLower(pattern)}), Cat("review.flag ", Quoted(pattern))});
  }
}

HostExecRules HostExecRules::From(const Config& config) {
  return HostExecRules(config.List("review.flag"));
}

std::optional<std::string> HostExecRules::Why(std::string_view path) const {
  std::vector<std::string> parts = Split(ToLower(path), '/');
  if (parts.empty()) return std::nullopt;
  for (const std::string& p : parts) {
    if (IsGitName(p)) return std::string("git");
  }
  // The built-in patterns only where a quick test of names says one may match: all of them cost
  // about ten microseconds a path, and every file of a shared project is asked at a session's
  // end, and the guard asks for each file made. (Every name, the folders' too: a pattern matches
  // a folder and all it holds.)
  bool may = false;
  for (size_t i = 0; !may && i < parts.size(); ++i) {
    may = names_.count(parts[i]) > 0 || folders_.count(parts[i]) > 0;
    for (auto g = globs_.begin(); !may && g != globs_.end(); ++g) {
      may = ::fnmatch(g->c_str(), parts[i].c_str(), 0) == 0;
    }
  }
  for (size_t i = may ? 0 : built_in_; i < rules_.size(); ++i) {
    if (rules_[i].first.Why(parts, false)) return rules_[i].second;
  }
  return std::nullopt;
}

namespace {

bool AtOrAfter(const struct timespec& t, const struct timespec& since) {
  return t.tv_sec > since.tv_sec || (t.tv_sec == since.tv_sec && t.tv_nsec >= since.tv_nsec);
}

// Inside the top .git: what git runs or obeys (not its objects, refs or logs).
bool GitObeys(std::string_view rest) {
  return rest == "config" || rest == "config.worktree" || rest == "commondir" ||
         rest.starts_with("hooks/") || rest.starts_with("info/") ||
         rest.starts_with("worktrees/") ||
         (rest.starts_with("modules/") &&
          (rest.ends_with("/config") || rest.find("/hooks/") != std::string_view::npos));
}

struct Walk {
  const HostExecRules& rules;
  struct timespec since;
  std::vector<HostExecChange> out;
  size_t seen = 0;

  void Dir(int fd, const std::string& rel, bool in_git) {
    for (const auto& [name, type] : ReadDirAt(fd)) {
      if (++seen > 500000) return;  // a bound on the time a huge folder takes
      std::string path = rel.empty() ? name : Cat(rel, "/", name);
      struct stat st {};
      if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      bool changed = AtOrAfter(st.st_ctim, since);
      bool dir = S_ISDIR(st.st_mode);
      if (!in_git && IsGitName(name)) {
        if (!rel.empty() || !dir) {
          // Another repository below the top, or the top one replaced by a file (gitdir: ...).
          if (changed) out.push_back({path, "git (a repository with settings of its own)"});
          continue;
        }
        Descend(fd, name, path, true);
        continue;
      }
      if (in_git) {
        std::string_view rest = std::string_view(path).substr(path.find('/') + 1);
        if (dir) {
          if (rest == "objects" || rest == "refs" || rest == "logs" || rest == "lfs") continue;
          Descend(fd, name, path, true);
        } else if (changed && GitObeys(rest)) {
          out.push_back({path, "git"});
        }
        continue;
      }
      if (dir) {
        if (name == "node_modules") continue;
        Descend(fd, name, path, false);
      } else if (changed) {
        if (auto why = rules.Why(path)) out.push_back({path, *why});
      }
    }
  }

  void Descend(int parent, const std::string& name, const std::string& path, bool in_git) {
    Fd sub(OpenDirAt(parent, name));
    if (sub.ok()) Dir(sub.get(), path, in_git);
  }
};

}  // namespace

std::vector<HostExecChange> ChangedHostExec(const std::string& dir, const struct timespec& since,
                                            const HostExecRules& rules) {
  Fd top(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.ok()) return {};
  Walk walk{rules, since, {}, 0};
  walk.Dir(top.get(), "", false);
  std::sort(walk.out.begin(), walk.out.end(),
            [](const HostExecChange& a, const HostExecChange& b) { return a.path < b.path; });
  return std::move(walk.out);
}

}  // namespace ss
