// The named rule sets a sandbox's egress policy is made of (`network.presets` in config.yaml):
//   agent     what the agent itself needs: Anthropic's API, login and update hosts, and the
//             Claude in Chrome relay when the browser is used through it
//   packages  the Debian archive and the npm registry the sandbox's image was built from (read
//             from the image's record, never a list in code)
//   github    GitHub's web, API, git and content hosts
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "net_policy.hpp"

namespace ss {

struct NetPresetContext {
  std::string mirror;        // the image's Debian archive: "http://deb.debian.org/debian"
  std::string npm_registry;  // the image's npm registry: "https://registry.npmjs.org"
  bool browser_relay = false;
};

std::vector<std::string> NetPresetNames();

// The rules of preset `name` (nothing for an unknown name).
std::optional<std::vector<NetRule>> NetPresetRules(std::string_view name,
                                                   const NetPresetContext& context);

// The host of a URL ("http://deb.debian.org/debian" → "deb.debian.org"), with ":PORT" when the
// URL names one; nothing when it is not a URL with a host.
std::optional<std::string> UrlHost(std::string_view url);

}  // namespace ss
