// The agent's own configuration (agent.config, else sandboxes.NAME.agent.config or
// profiles.NAME.agent.config): a host folder, such as a repository's sandbox/claude/, whose files
// are copied into the sandbox's ~/.claude when the sandbox is made and by `ss vm provision`;
// never mounted, so nothing the agent writes there reaches the host.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace ss {

class Config;
class SshConnection;

struct AgentConfigCopy {
  std::string folder;  // the host folder, resolved
  int64_t bytes = 0;   // sent (a tar stream)
};

// Copies the folder configured for `sandbox` into /home/sandbox/.claude; nullopt when none is
// configured. Throws ss::Error (66, 77 as ResolveHostFolder; 74 when the copy fails).
std::optional<AgentConfigCopy> CopyAgentConfig(SshConnection& conn, const Config& config,
                                               const std::string& sandbox);

}  // namespace ss
