// Where a sandbox's network state lives on the host, and its policy as stored:
//   SandboxesDir()/NAME/net/   (0700)
//     policy.json   the policy (0600), read again by a running ss-net when it changes
//     log.jsonl     one JSON line per connection or lookup (0600)
//     serve.json    the running ss-net: pid and where it listens (egress.cpp)
//     serve.log     what it printed
#pragma once

#include <string>

#include "net_policy.hpp"

namespace ss {

std::string SandboxNetDir(const std::string& sandbox);
std::string NetPolicyPath(const std::string& sandbox);
std::string NetLogPath(const std::string& sandbox);

// The sandbox's policy as stored; a sandbox that has none yet has the default policy
// (allowlist: the agent, packages and github presets, packages from its image's record).
NetPolicy LoadNetPolicy(const std::string& sandbox);
void SaveNetPolicy(const std::string& sandbox, const NetPolicy& policy);

}  // namespace ss
