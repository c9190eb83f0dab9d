#include "agent_config.hpp"

#include "config.hpp"
#include "paths.hpp"
#include "shares.hpp"
#include "strings.hpp"
#include "transfer.hpp"

namespace ss {

std::optional<AgentConfigCopy> CopyAgentConfig(SshConnection& conn, const Config& config,
                                               const std::string& sandbox) {
  Json value = config.SandboxValue(sandbox, "agent.config");
  if (!value.is_string() || value.get<std::string>().empty()) return std::nullopt;
  std::string key = config.SandboxKey(sandbox, "agent.config");
  std::string origin =
      Cat(key.empty() ? std::string("agent.config") : key, " in ", DisplayPath(ConfigPath()));
  // A relative folder is relative to config.yaml's.
  std::string folder = value.get<std::string>();
  if (folder[0] != '/' && folder[0] != '~') folder = Cat(SsHome(), "/", folder);
  AgentConfigCopy copy;
  copy.folder = ResolveHostFolder(folder, "agent configuration folder", origin, false);
  copy.bytes = PushTree(conn, copy.folder, "/home/sandbox/.claude");
  return copy;
}

}  // namespace ss
