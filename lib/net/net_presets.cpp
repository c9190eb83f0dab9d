#include "net_presets.hpp"

#include "strings.hpp"

namespace ss {

std::vector<std::string> NetPresetNames() { return {"agent", "packages", "github"}; }

std::optional<std::string> UrlHost(std::string_view url) {
  size_t scheme = url.find("://");
  if (scheme == std::string_view::npos || scheme == 0) return std::nullopt;
  std::string_view rest = url.substr(scheme + 3);
  std::string_view authority = rest.substr(0, rest.find_first_of("/?#"));
  if (authority.empty() || authority.find('@') != std::string_view::npos) return std::nullopt;
  try {
    return ParseNetRule(authority).text;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<std::vector<NetRule>> NetPresetRules(std::string_view name,
                                                   const NetPresetContext& context) {
  std::vector<std::string> rules;
  if (name == "agent") {
    // The API (api.anthropic.com), console and login hosts (platform.claude.com, claude.ai),
    // native downloads and updates (downloads.claude.ai).
    rules = {"anthropic.com", "*.anthropic.com", "claude.ai",
             "*.claude.ai",   "claude.com",      "*.claude.com"};
    if (context.browser_relay) rules.push_back("*.claudeusercontent.com");
  } else if (name == "packages") {
    for (const std::string& url : {context.mirror, context.npm_registry}) {
      if (auto host = UrlHost(url)) rules.push_back(*host);
    }
  } else if (name == "github") {
    rules = {"github.com", "*.github.com", "githubusercontent.com", "*.githubusercontent.com"};
  } else {
    return std::nullopt;
  }
  std::vector<NetRule> out;
  for (const std::string& r : rules) out.push_back(ParseNetRule(r));
  return out;
}

}  // namespace ss
