// A session's side of credential injection (net_policy.hpp NetInjection): the secrets that
// config.yaml declares injected reach the sandbox as placeholders only, with the install's CA
// trusted there, while the real values stay on the host for ss-net to put in.
#pragma once

#include <string>
#include <vector>

#include "config.hpp"
#include "ssh.hpp"

namespace ss {

struct InjectedSecrets {
  EnvList env;  // each injected secret's placeholder, and NODE_EXTRA_CA_CERTS; empty: none
  std::vector<std::string> names;
};

// Writes the sandbox's injection rules from config.yaml into its policy (ss-net follows) and
// returns what the session's environment gets for them. Throws ss::Error (78) when a rule
// cannot be made.
InjectedSecrets PrepareInjectedSecrets(const Config& config, const std::string& sandbox);

// Puts the install's CA into the sandbox's system store (kSandboxCaPath, then
// update-ca-certificates, as root through sudo), unless it is there already. Throws ss::Error (69)
// when it cannot.
void TrustNetCa(SshConnection& conn);

}  // namespace ss
