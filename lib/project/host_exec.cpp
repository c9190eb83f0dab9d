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
#include "git_layer.hpp"
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
      {".nvimrc", "Neovim (exrc)"},
      {".lazy.lua", "lazy.nvim (a project's plugin specifications)"},
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
      {"stylelint.config.*", "Stylelint (its configuration is code editors run)"},
      {".stylelintrc.js", "Stylelint (its configuration is code editors run)"},
      {".stylelintrc.cjs", "Stylelint (its configuration is code editors run)"},
      {".stylelintrc.mjs", "Stylelint (its configuration is code editors run)"},
      {"tailwind.config.*", "Tailwind CSS (its configuration is code editors run)"},
      {"vite.config.*", "Vite and Vitest (editors load the configuration to find tests)"},
      {"vitest.config.*", "Vitest (editors load the configuration to find tests)"},
      {"vitest.workspace.*", "Vitest (editors load the configuration to find tests)"},
      {"jest.config.*", "Jest (editors load the configuration to find tests)"},
      {"playwright.config.*", "Playwright (editors load the configuration to find tests)"},
      {"*.code-workspace", "VS Code (a workspace's tasks and settings)"},
      // Builds an editor or IDE runs when it opens a project, to learn its structure.
      {"build.rs", "Cargo (rust-analyzer runs build scripts on opening a project)"},
      {"Cargo.toml",
       "Cargo (rust-analyzer runs the build scripts and procedural macros it names on opening a "
       "project)"},
      {"build.gradle", "Gradle (IDEs run the build to import a project)"},
      {"build.gradle.kts", "Gradle (IDEs run the build to import a project)"},
      {"settings.gradle", "Gradle (IDEs run the build to import a project)"},
      {"settings.gradle.kts", "Gradle (IDEs run the build to import a project)"},
      {"gradle.properties", "Gradle (JVM options name agents it loads)"},
      {"gradle/wrapper/gradle-wrapper.properties",
       "Gradle (the wrapper runs the distribution it names)"},
      {".mvn/***", "Maven (the wrapper and the JVM options it runs with)"},
      {"build.sbt", "sbt (IDEs run the build to import a project)"},
      {"project/*.sbt", "sbt (IDEs run the build to import a project)"},
      {"project/*.scala", "sbt (IDEs run the build to import a project)"},
      {"project/build.properties", "sbt (the launcher runs the version it names)"},
      {".jvmopts", "sbt (JVM options name agents it loads)"},
      {".sbtopts", "sbt (JVM options name agents it loads)"},
      // Tests and linters editors run on their own, whose configuration is code or names it.
      {"conftest.py", "pytest (editors collect tests, which runs it)"},
      {".pylintrc", "Pylint (load-plugins and init-hook run code; editors lint on opening)"},
      {"pylintrc", "Pylint (load-plugins and init-hook run code; editors lint on opening)"},
      // Interpreters that run a file of the folder they start in.
      {".irbrc", "IRB (runs the one in the folder it starts in)"},
      {".pryrc", "Pry (runs the one in the folder it starts in)"},
      {".Rprofile", "R (runs the one in the folder it starts in)"},
      {".ghci", "GHCi (runs the one in the folder it starts in)"},
      {".ocamlinit", "OCaml's toplevel (runs the one in the folder it starts in)"},
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
    AddHolders(p);
    if (p.ends_with("/***")) {
      p.resize(p.size() - 4);
      folders_.insert(p.substr(p.rfind('/') + 1));
    } else {
      std::string last = p.substr(p.rfind('/') + 1);
      (last.find_first_of("*?[") == std::string::npos ? names_ : globs_).insert(last);
    }
  }
  built_in_ = rules_.size();
  for (const std::string& pattern : extra) Add(pattern, Cat("review.flag ", Quoted(pattern)));
}

void HostExecRules::Add(const std::string& pattern, std::string what) {
  rules_.push_back({ExcludeRules({ToLower(pattern)}), std::move(what)});
  AddHolders(ToLower(pattern));
}

void HostExecRules::AddHolders(std::string pattern) {
  if (pattern.ends_with("/***")) {
    pattern.resize(pattern.size() - 4);
  } else if (size_t slash = pattern.rfind('/'); slash != std::string::npos) {
    pattern.resize(slash);
  } else {
    return;  // a name alone: no folder
  }
  for (const std::string& part : Split(pattern, '/')) {
    if (part.empty()) continue;
    (part.find_first_of("*?[") == std::string::npos ? holders_ : holder_globs_).insert(part);
  }
}

bool HostExecRules::MayHold(std::string_view name) const {
  std::string lower = ToLower(name);
  if (holders_.count(lower)) return true;
  for (const auto& g : holder_globs_) {
    if (::fnmatch(g.c_str(), lower.c_str(), 0) == 0) return true;
  }
  return false;
}

bool AtOrAfter(const struct timespec& t, const struct timespec& since) {
  return t.tv_sec > since.tv_sec || (t.tv_sec == since.tv_sec && t.tv_nsec >= since.tv_nsec);
}

HostExecRules HostExecRules::From(const Config& config, const std::string& dir) {
  HostExecRules rules(config.List("review.flag"));
  if (!dir.empty()) {
    if (auto hooks = HooksFolderIn(dir))
      rules.Add(Cat("/", *hooks, "/***"), "git (core.hooksPath)");
  }
  return rules;
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

// A walk stops after this many entries: a bound on the time a huge folder takes.
constexpr size_t kMaxEntries = 500000;

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
  HostExecChanges out;
  size_t seen = 0;

  // `moved`: when a folder above, one that may hold such files, changed since; null if none did.
  void Dir(int fd, const std::string& rel, bool in_git, const struct timespec* moved) {
    for (const auto& [name, type] : ReadDirAt(fd)) {
      if (++seen > kMaxEntries) {  // a bound on the time a huge folder takes
        out.cut_at = kMaxEntries;
        return;
      }
      std::string path = rel.empty() ? name : Cat(rel, "/", name);
      struct stat st {};
      if (::fstatat(fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;
      bool own = AtOrAfter(st.st_ctim, since);
      bool changed = own || moved;
      bool dir = S_ISDIR(st.st_mode);
      // When it changed: its own time, or its folder's when that is later (moved into place).
      auto add = [&](std::string what, bool link_to_folder = false,
                     const struct timespec& at = {}) {
        struct timespec t = AtOrAfter(at, st.st_ctim) ? at : st.st_ctim;
        bool folder_later = moved && !AtOrAfter(t, *moved);
        out.files.push_back({path, std::move(what), folder_later ? *moved : t, link_to_folder});
      };
      if (!in_git && IsGitName(name)) {
        if (!rel.empty() || !dir) {
          // Another repository below the top, or the top one replaced by a file (gitdir: ...).
          if (changed) add("git (a repository with settings of its own)");
          continue;
        }
        Descend(fd, name, path, true, nullptr);
        continue;
      }
      if (in_git) {
        std::string_view rest = std::string_view(path).substr(path.find('/') + 1);
        if (dir) {
          if (rest == "objects" || rest == "refs" || rest == "logs" || rest == "lfs") continue;
          Descend(fd, name, path, true, nullptr);
        } else if (changed && GitObeys(rest)) {
          add("git");
        }
        continue;
      }
      if (dir) {
        if (name == "node_modules") continue;
        Descend(fd, name, path, false, own && rules.MayHold(name) ? &st.st_ctim : moved);
      } else if (changed || S_ISLNK(st.st_mode)) {
        std::optional<std::string> why = rules.Why(path);
        // A link: the host's tools follow it. To a folder: ss does not look in it. To a file: that
        // file changed counts (whatever its own name).
        struct stat to {};
        bool followed = S_ISLNK(st.st_mode) && (why || rules.MayHold(name)) &&
                        ::fstatat(fd, name.c_str(), &to, 0) == 0;
        if (followed && S_ISDIR(to.st_mode)) {
          add(why.value_or("a folder the host's tools obey"), true);
        } else if (why && (changed || (followed && AtOrAfter(to.st_ctim, since)))) {
          add(*why, false, followed ? to.st_ctim : st.st_ctim);
        }
      }
    }
  }

  void Descend(int parent, const std::string& name, const std::string& path, bool in_git,
               const struct timespec* moved) {
    Fd sub(OpenDirAt(parent, name));
    if (sub.ok()) Dir(sub.get(), path, in_git, moved);
  }
};

}  // namespace

HostExecChanges ChangedHostExec(const std::string& dir, const struct timespec& since,
                                const HostExecRules& rules) {
  Fd top(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!top.ok()) return {};
  Walk walk{rules, since, {}, 0};
  walk.Dir(top.get(), "", false, nullptr);
  std::sort(walk.out.files.begin(), walk.out.files.end(),
            [](const HostExecChange& a, const HostExecChange& b) { return a.path < b.path; });
  return std::move(walk.out);
}

}  // namespace ss
