// Where a sandbox's network state lives on the host, and its policy:
//   SandboxesDir()/NAME/net/   (0700)
//     policy.json   the policy ss-net enforces (0600), read again by a running ss-net when it
//                   changes: the configured policy with the changes below on top
//     changes.json  what `ss net allow|deny|mode` changed, in order (0600); a sandbox's reset
//                   keeps it
//     inject.json   the secrets ss-net puts in for it, with their placeholders (0600)
//     log.jsonl     one JSON line per connection or lookup (0600)
//     serve.json    the running ss-net: pid and where it listens (egress.cpp)
//     serve.log     what it printed
//
// The configured policy is config.yaml's `network:` (sandboxes.NAME.network, key by key, else
// the top level's; by default allowlist with the agent, packages and github presets). An edit
// of config.yaml counts from the sandbox's next start or session; `ss net` changes at once.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "net_policy.hpp"

namespace ss {

std::string SandboxNetDir(const std::string& sandbox);
std::string NetPolicyPath(const std::string& sandbox);
std::string NetLogPath(const std::string& sandbox);
std::string NetChangesPath(const std::string& sandbox);
std::string NetInjectPath(const std::string& sandbox);

// The policy config.yaml gives the sandbox, presets expanded (packages from its image's record).
NetPolicy ConfiguredNetPolicy(const std::string& sandbox);

// The policy in force: the configured one with the sandbox's changes on top, and its
// injections.
NetPolicy LoadNetPolicy(const std::string& sandbox);

// Records a change ("allow" or "deny" with rules, "mode" with a mode's name; a later change of
// the same rule or of the mode replaces the earlier) and writes the policy in force.
void ChangeNetPolicy(const std::string& sandbox, const std::string& verb,
                     const std::vector<std::string>& values);

// Writes the policy in force unless the file already holds it (a config.yaml edit since); true
// when it wrote.
bool WriteNetPolicy(const std::string& sandbox);

// Makes the sandbox's injection rules `wanted` (their placeholders ignored): each secret keeps
// the placeholder it had, or gets a new one (ss-placeholder- and 32 random hex digits), so the
// sandbox sees the same placeholder in every session. Writes the policy in force when it
// changed (a running ss-net follows) and returns {secret, placeholder} for each.
std::vector<std::pair<std::string, std::string>> ApplyNetInjections(
    const std::string& sandbox, std::vector<NetInjection> wanted);

}  // namespace ss
