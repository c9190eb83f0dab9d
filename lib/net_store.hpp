// Where a sandbox's network state lives on the host, and its policy as stored:
//   SandboxesDir()/NAME/net/   (0700)
//     policy.json   the policy (0600), read again by a running ss-net when it changes
//     log.jsonl     one JSON line per connection or lookup (0600)
//     serve.json    the running ss-net: pid and where it listens (egress.cpp)
//     serve.log     what it printed
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "net_policy.hpp"

namespace ss {

std::string SandboxNetDir(const std::string& sandbox);
std::string NetPolicyPath(const std::string& sandbox);
std::string NetLogPath(const std::string& sandbox);

// The sandbox's policy as stored; a sandbox that has none yet has the default policy
// (allowlist: the agent, packages and github presets, packages from its image's record).
NetPolicy LoadNetPolicy(const std::string& sandbox);
void SaveNetPolicy(const std::string& sandbox, const NetPolicy& policy);

// Makes the sandbox's injection rules `wanted` (their placeholders ignored): each secret keeps
// the placeholder it has in the stored policy, or gets a new one (ss-placeholder- and 32 random
// hex digits), so the sandbox sees the same placeholder in every session. Saves the policy when
// it changed (a running ss-net follows) and returns {secret, placeholder} for each.
std::vector<std::pair<std::string, std::string>> ApplyNetInjections(
    const std::string& sandbox, std::vector<NetInjection> wanted);

}  // namespace ss
