#include "host_exec.hpp"

#include "config.hpp"
#include "exclude_rules.hpp"
#include "strings.hpp"

namespace ss {

const std::vector<HostExecPattern>& BuiltInHostExec() {
  static const std::vector<HostExecPattern> list = {
      // git: the repository's metadata never crosses; these select drivers and repositories.
      {".git", "git"},
      {".gitattributes", "git (attributes pick filter and diff programs)"},
      {".gitmodules", "git (submodules)"},
      {".gitconfig", "git"},
      {".pre-commit-config.yaml", "pre-commit"},
      {".husky/***", "husky (git hooks)"},
      {"lefthook.yml", "lefthook (git hooks)"},
      {".lefthook.yml", "lefthook (git hooks)"},
      {"lefthook-local.yml", "lefthook (git hooks)"},
      {".envrc", "direnv"},
      // Coding agents: hooks, commands, MCP servers they start.
      {".claude/***", "Claude Code (hooks, commands)"},
      {".mcp.json", "MCP clients (servers they start)"},
      {".gemini/***", "Gemini CLI"},
      {".codex/***", "Codex CLI"},
      {"opencode.json", "opencode (plugins, MCP servers)"},
      {".opencode/***", "opencode"},
      {".cursor/***", "Cursor"},
      // Editors and IDEs: tasks run on opening a folder, settings naming programs.
      {".vscode/***", "VS Code (tasks, settings)"},
      {".devcontainer/***", "dev containers (initializeCommand runs on the host)"},
      {".idea/***", "JetBrains IDEs (run configurations, file watchers)"},
      {".zed/***", "Zed (tasks)"},
  };
  return list;
}

HostExecRules::HostExecRules(std::vector<std::string> extra) : extra_(std::move(extra)) {}

HostExecRules HostExecRules::From(const Config& config) {
  return HostExecRules(config.List("review.flag"));
}

std::optional<std::string> HostExecRules::Why(std::string_view path) const {
  std::vector<std::string> parts = Split(path, '/');
  if (parts.empty()) return std::nullopt;
  for (const std::string& p : parts) {
    if (IsGitName(p)) return std::string("git");
  }
  for (const auto& [pattern, what] : BuiltInHostExec()) {
    if (ExcludeRules({pattern}).Why(parts, false)) return what;
  }
  for (const std::string& pattern : extra_) {
    if (ExcludeRules({pattern}).Why(parts, false)) return Cat("review.flag ", Quoted(pattern));
  }
  return std::nullopt;
}

}  // namespace ss
