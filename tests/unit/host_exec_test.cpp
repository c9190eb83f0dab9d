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
#include "process.hpp"
#include "strings.hpp"

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
                           ".nvimrc",
                           "lua/.lazy.lua",
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
                           "venv/pyvenv.cfg",
                           "tailwind.config.js",
                           "web/tailwind.config.ts",
                           "stylelint.config.mjs",
                           ".stylelintrc.js",
                           "vite.config.ts",
                           "vitest.config.mts",
                           "packages/ui/vitest.workspace.ts",
                           "jest.config.cjs",
                           "e2e/playwright.config.ts",
                           "app.code-workspace",
                           "build.rs",
                           "crates/sys/build.rs",
                           "Cargo.toml",
                           "crates/macros/Cargo.toml",
                           "build.gradle",
                           "app/build.gradle.kts",
                           "settings.gradle.kts",
                           "gradle.properties",
                           "gradle/wrapper/gradle-wrapper.properties",
                           ".mvn/jvm.config",
                           ".mvn/wrapper/maven-wrapper.properties",
                           "build.sbt",
                           "project/plugins.sbt",
                           "project/Dependencies.scala",
                           "project/build.properties",
                           ".jvmopts",
                           ".sbtopts",
                           "conftest.py",
                           "tests/unit/conftest.py",
                           ".pylintrc",
                           "pylintrc",
                           ".irbrc",
                           ".pryrc",
                           ".Rprofile",
                           "analysis/.Rprofile",
                           ".ghci",
                           ".ocamlinit"}) {
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
  for (const char* path : {"README.md",
                           "src/main.cpp",
                           "claude/settings.json",
                           ".claudex/a",
                           "my.envrc",
                           ".envrc.example/x",
                           "docs/.vscode.md",
                           "Makefile",
                           "package.json",
                           "gitattributes",
                           ".github/workflows/ci.yml",
                           "config/app.toml",
                           "docs/config",
                           "HEADER.md",
                           ".environment",
                           ".venv/lib/python3.11/site-packages/x.py",
                           ".venv/bin/pip",
                           "src/build.rs.bak",
                           "tailwind.css",
                           "vite.svg",
                           "gradle/libs.versions.toml",
                           "docs/workspace.md",
                           "pom.xml"}) {
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

// A repository of the user's that runs its hooks from a folder of the project (core.hooksPath):
// that folder's files are the host's to run; a hooks folder elsewhere is none of the project's.
TEST(HostExec, TheFolderARepositorysHooksPathNamesInTheProject) {
  TempDir tmp;
  std::string dir = tmp.path() + "/app";
  MakeDirs(dir);
  RunChecked({"git", "init", "-q", dir}, "git init");
  Config c = Config::Parse("", "c.yaml");
  auto why = [&](const std::string& hooks_path, const std::string& path) {
    RunChecked({"git", "-C", dir, "config", "core.hooksPath", hooks_path}, "git config");
    return HostExecRules::From(c, dir).Why(path).value_or("");
  };
  EXPECT_EQ(why(".githooks", ".githooks/pre-commit"), "git (core.hooksPath)");
  EXPECT_EQ(why("./tools/../hooks/", "hooks/pre-push"), "git (core.hooksPath)");
  EXPECT_EQ(why(dir + "/ci/hooks", "ci/hooks/commit-msg"), "git (core.hooksPath)");
  EXPECT_EQ(why("hooks", "sub/hooks/pre-commit"), "");  // from the top only
  EXPECT_EQ(why("../elsewhere", "elsewhere/pre-commit"), "");
  EXPECT_EQ(why("/usr/share/hooks", "usr/share/hooks/pre-commit"), "");
  EXPECT_EQ(why("~/hooks", "hooks/pre-commit"), "");
  // Not a repository: nothing asked.
  EXPECT_EQ(HostExecRules::From(c, tmp.path()).Why("hooks/pre-commit"), std::nullopt);
}

// What a session in a shared folder changed that the host obeys: by change time (which nothing in
// the sandbox can set back), in .git only what git runs or obeys, never walked through a link;
// a link of such a name counts when the file it leads to changed.
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
  write("data/env.txt");
  ASSERT_EQ(::symlink("data/env.txt", (d + "/.envrc").c_str()), 0);
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
  write("data/env.txt", "export X=1");  // through the link .envrc, made before
  ASSERT_EQ(::symlink("/etc", (d + "/link").c_str()), 0);
  std::vector<std::string> got;
  for (const auto& c : ChangedHostExec(d, before, HostExecRules({"Makefile"})).files) {
    got.push_back(c.path + " " + c.what);
  }
  std::sort(got.begin(), got.end());
  EXPECT_EQ(got, (std::vector<std::string>{
                     ".envrc direnv", ".git/config git", ".git/hooks/pre-commit git",
                     "Makefile review.flag 'Makefile'", "deep/er/.envrc direnv",
                     "sub/.git git (a repository with settings of its own)"}));
  // The top .git replaced by a file that points elsewhere.
  RemoveTree(d + "/.git");
  write(".git", "gitdir: /tmp/elsewhere\n");
  bool named = false;
  for (const auto& c : ChangedHostExec(d, before, HostExecRules()).files) {
    named |= c.path == ".git";
  }
  EXPECT_TRUE(named);
}

// A folder renamed into place keeps its files' own times: what it holds counts as changed with
// it. A link the host's tools follow to a folder counts every time.
TEST(HostExec, FoldersRenamedIntoPlaceAndLinksToFoldersAreNamed) {
  TempDir tmp;
  std::string d = tmp.path();
  auto write = [&](const std::string& rel) {
    std::string path = d + "/" + rel;
    MakeDirs(path.substr(0, path.rfind('/')), 0755);
    AtomicWrite(path, "x", 0644);
  };
  write("stage/tasks.json");
  write("stage2/settings.json");
  write("c/config.toml");
  write("pkg/.envrc");  // an old one, in a folder that changes: not named
  write("ideadir/workspace.xml");
  ASSERT_EQ(::symlink("ideadir", (d + "/.idea").c_str()), 0);
  ASSERT_EQ(::symlink("elsewhere", (d + "/.envrc").c_str()), 0);  // a link to no folder, old
  struct timespec before {};
  ::usleep(30000);
  ::clock_gettime(CLOCK_REALTIME, &before);
  ::usleep(30000);
  ASSERT_EQ(::rename((d + "/stage").c_str(), (d + "/.vscode").c_str()), 0);
  ASSERT_EQ(::rename((d + "/stage2").c_str(), (d + "/.claude").c_str()), 0);
  ASSERT_EQ(::rename((d + "/c").c_str(), (d + "/.cargo").c_str()), 0);
  write("pkg/new.txt");
  HostExecChanges found = ChangedHostExec(d, before, HostExecRules());
  std::vector<std::string> got;
  for (const auto& c : found.files) {
    got.push_back(Cat(c.path, c.link_to_folder ? " link" : ""));
    if (!c.link_to_folder) {
      EXPECT_TRUE(c.changed.tv_sec >= before.tv_sec) << c.path;
    }
  }
  EXPECT_EQ(got, (std::vector<std::string>{".cargo/config.toml", ".claude/settings.json",
                                           ".idea link", ".vscode/tasks.json"}));
  EXPECT_EQ(found.cut_at, 0u);
}

}  // namespace
}  // namespace ss
