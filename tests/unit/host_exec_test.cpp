// The files the host runs or obeys on its own: the built-in list at any depth, review.flag's
// patterns, and what is not one.
#include "host_exec.hpp"

#include "config.hpp"
#include "gtest/gtest.h"

namespace ss {
namespace {

TEST(HostExec, TheBuiltInListAtAnyDepth) {
  HostExecRules rules;
  for (const char* path :
       {".git/hooks/pre-commit", "sub/.git/config", "a/.GIT/HEAD", ".gitattributes",
        "vendor/lib/.gitattributes", ".gitmodules", ".envrc", "services/api/.envrc",
        ".claude/settings.json", ".claude/settings.local.json", ".claude/commands/x.md",
        "pkg/.claude/hooks/h.sh", ".mcp.json", ".vscode/tasks.json", ".vscode/settings.json",
        ".husky/pre-commit", ".husky/_/husky.sh", ".pre-commit-config.yaml", "lefthook.yml",
        ".devcontainer/devcontainer.json", ".idea/workspace.xml", ".gemini/settings.json",
        ".codex/config.toml", "opencode.json", ".zed/tasks.json"}) {
    EXPECT_TRUE(rules.Why(path)) << path;
  }
  EXPECT_EQ(rules.Why(".claude/settings.json"), "Claude Code (hooks, commands)");
  EXPECT_EQ(rules.Why("x/.git/config"), "git");
}

TEST(HostExec, OrdinaryFilesAreNot) {
  HostExecRules rules;
  for (const char* path : {"README.md", "src/main.cpp", "claude/settings.json", ".claudex/a",
                           "my.envrc", ".envrc.example/x", "docs/.vscode.md", "Makefile",
                           "package.json", "gitattributes", ".github/workflows/ci.yml"}) {
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

}  // namespace
}  // namespace ss
