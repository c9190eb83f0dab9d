// The files the host runs or obeys on its own: the built-in list at any depth, review.flag's
// patterns, and what is not one.
#include "host_exec.hpp"

#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>

#include "config.hpp"
#include "fs.hpp"
#include "gtest/gtest.h"

namespace ss {
namespace {

TEST(HostExec, TheBuiltInListAtAnyDepth) {
  HostExecRules rules;
  for (const char* path : {".git/hooks/pre-commit",
                           "sub/.git/config",
                           "a/.GIT/HEAD",
                           ".hg/hgrc",
                           "sub/.hg/hgrc",
                           ".jj/repo/config.toml",
                           ".gitattributes",
                           "vendor/lib/.gitattributes",
                           ".gitmodules",
                           ".envrc",
                           "services/api/.envrc",
                           ".claude/settings.json",
                           ".claude/settings.local.json",
                           ".claude/commands/x.md",
                           "pkg/.claude/hooks/h.sh",
                           ".mcp.json",
                           ".vscode/tasks.json",
                           ".vscode/settings.json",
                           ".husky/pre-commit",
                           ".husky/_/husky.sh",
                           ".pre-commit-config.yaml",
                           "lefthook.yml",
                           ".devcontainer/devcontainer.json",
                           ".idea/workspace.xml",
                           ".gemini/settings.json",
                           ".codex/config.toml",
                           "opencode.json",
                           ".zed/tasks.json",
                           ".env",
                           "mise.toml",
                           ".lfsconfig",
                           ".npmrc",
                           ".yarnrc.yml",
                           ".cargo/config.toml",
                           ".nvim.lua",
                           ".exrc",
                           "docs/HEAD",
                           "a/b/head",
                           ".env.local",
                           "mise.local.toml",
                           ".config/mise/config.toml",
                           ".config/mise.toml",
                           ".mise/tasks/build",
                           ".tool-versions",
                           ".yarnrc",
                           ".pnpmfile.cjs",
                           "bunfig.toml",
                           "rust-toolchain.toml",
                           "rust-toolchain",
                           ".helix/languages.toml",
                           ".venv/bin/python",
                           ".venv/bin/python3.11",
                           "venv/pyvenv.cfg"}) {
    EXPECT_TRUE(rules.Why(path)) << path;
  }
  EXPECT_EQ(rules.Why(".claude/settings.json"), "Claude Code (hooks, commands)");
  EXPECT_EQ(rules.Why("x/.git/config"), "git");
  EXPECT_EQ(rules.Why("docs/HEAD"), "git (a repository's HEAD: git obeys the config beside it)");
  // In any letter case: a case-insensitive file system opens these as the names tools obey.
  for (const char* path :
       {".ENVRC", "a/.VSCode/Tasks.json", ".Claude/Settings.JSON", ".HUSKY/x", ".GitModules"}) {
    EXPECT_TRUE(rules.Why(path)) << path;
  }
  EXPECT_TRUE(HostExecRules({"Makefile"}).Why("MAKEFILE"));
}

TEST(HostExec, TheQuickTestOfNamesNeverChangesAnAnswer) {
  // The same patterns given as review.flag are always matched in full: every path of each
  // built-in pattern, anywhere, below it, in any case, is found by the quick way too.
  std::vector<std::string> patterns;
  for (const auto& p : BuiltInHostExec()) patterns.push_back(p.pattern);
  HostExecRules quick, full(patterns);
  std::vector<std::string> paths = {"src/main.rs", "a/b/c/d.js", "README.md", "x"};
  for (std::string p : patterns) {
    for (auto [from, to] :
         {std::pair<std::string, std::string>{"/***", "/x/y"}, {"*", "ab"}, {"?", "q"}}) {
      for (size_t at; (at = p.find(from)) != std::string::npos;) p.replace(at, from.size(), to);
    }
    std::string upper = p;
    for (char& c : upper) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    for (const std::string& path : {p, "deep/er/" + p, p + "/below", upper, "d/" + upper + "/b"}) {
      paths.push_back(path);
    }
  }
  for (const std::string& path : paths) {
    EXPECT_EQ(quick.Why(path).has_value(), full.Why(path).has_value()) << path;
  }
}

TEST(HostExec, OrdinaryFilesAreNot) {
  HostExecRules rules;
  for (const char* path :
       {"README.md", "src/main.cpp", "claude/settings.json", ".claudex/a", "my.envrc",
        ".envrc.example/x", "docs/.vscode.md", "Makefile", "package.json", "gitattributes",
        ".github/workflows/ci.yml", "config/app.toml", "docs/config", "HEADER.md", ".environment",
        ".venv/lib/python3.11/site-packages/x.py", ".venv/bin/pip"}) {
    EXPECT_FALSE(rules.Why(path)) << path;
  }
}

TEST(HostExec, ReviewFlagAddsPatterns) {
  HostExecRules rules({"Makefile", "/scripts/***", "*.sh"});
  EXPECT_EQ(rules.Why("Makefile"), "review.flag 'Makefile'");
  EXPECT_EQ(rules.Why("sub/Makefile"), "review.flag 'Makefile'");
  EXPECT_TRUE(rules.Why("scripts/deploy/run"));
  EXPECT_FALSE(rules.Why("lib/scripts/run"));  // anchored at the top
  EXPECT_TRUE(rules.Why("tools/build.sh"));
  EXPECT_FALSE(rules.Why("tools/build.py"));
  Config c = Config::Parse("review.flag: [package.json]\n", "c.yaml");
  EXPECT_EQ(HostExecRules::From(c).Why("package.json"), "review.flag 'package.json'");
  EXPECT_TRUE(HostExecRules::From(c).Why(".envrc"));
}

// What a session in a shared folder changed that the host obeys: by change time (which nothing in
// the sandbox can set back), in .git only what git runs or obeys, never through a link.
TEST(HostExec, ChangedSinceASessionStarted) {
  TempDir tmp;
  std::string d = tmp.path();
  auto write = [&](const std::string& rel, const std::string& text = "x") {
    std::string path = d + "/" + rel;
    MakeDirs(path.substr(0, path.rfind('/')), 0755);
    AtomicWrite(path, text, 0644);
  };
  write(".git/config");
  write(".git/objects/aa/bb");
  write(".claude/settings.json");
  write("old/.envrc");
  struct timespec before {};
  ::usleep(30000);  // change times come from a clock a few milliseconds coarse
  ::clock_gettime(CLOCK_REALTIME, &before);
  ::usleep(30000);
  write(".git/config", "[core]\n\tfsmonitor = touch /tmp/x\n");
  write(".git/hooks/pre-commit");
  write(".git/objects/cc/dd");
  write(".git/refs/heads/main");
  write(".git/index");
  write("sub/.git/config");  // a repository of its own below the top
  write("deep/er/.envrc");
  write("node_modules/x/.envrc");  // not walked
  write("src/main.cpp");
  write("Makefile");
  ASSERT_EQ(::symlink("/etc", (d + "/link").c_str()), 0);
  std::vector<std::string> got;
  for (const auto& c : ChangedHostExec(d, before, HostExecRules({"Makefile"}))) {
    got.push_back(c.path + " " + c.what);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got,
            (std::vector<std::string>{".git/config git", ".git/hooks/pre-commit git",
                                      "Makefile review.flag 'Makefile'", "deep/er/.envrc direnv",
                                      "sub/.git git (a repository with settings of its own)"}));
  // The top .git replaced by a file that points elsewhere.
  RemoveTree(d + "/.git");
  write(".git", "gitdir: /tmp/elsewhere\n");
  bool named = false;
  for (const auto& c : ChangedHostExec(d, before, HostExecRules())) named |= c.path == ".git";
  EXPECT_TRUE(named);
}

}  // namespace
}  // namespace ss
