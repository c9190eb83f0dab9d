// The presets a sandbox's egress policy is made of.
#include "net_presets.hpp"

#include "gtest/gtest.h"

namespace ss {
namespace {

std::vector<std::string> Texts(const std::vector<NetRule>& rules) {
  std::vector<std::string> out;
  for (const auto& r : rules) out.push_back(r.text);
  return out;
}

TEST(NetPresets, PackagesComeFromTheImagesRecord) {
  NetPresetContext c{"http://deb.debian.org/debian", "https://registry.npmjs.org", false};
  EXPECT_EQ(Texts(*NetPresetRules("packages", c)),
            (std::vector<std::string>{"deb.debian.org", "registry.npmjs.org"}));
  NetPresetContext mirror{"http://Mirror.Example:8080/debian/", "https://npm.example/", false};
  EXPECT_EQ(Texts(*NetPresetRules("packages", mirror)),
            (std::vector<std::string>{"mirror.example:8080", "npm.example"}));
  NetPresetContext none{"", "not a url", false};
  EXPECT_TRUE(NetPresetRules("packages", none)->empty());
}

TEST(NetPresets, TheAgentsHostsAndTheRelayOnlyWhenUsed) {
  NetPresetContext c;
  NetPolicy p;
  p.allow = *NetPresetRules("agent", c);
  for (const char* host : {"api.anthropic.com", "claude.ai", "platform.claude.com",
                           "downloads.claude.ai", "statsig.anthropic.com"}) {
    EXPECT_TRUE(Decide(p, host, 443).allowed) << host;
  }
  EXPECT_FALSE(Decide(p, "bridge.claudeusercontent.com", 443).allowed);
  EXPECT_FALSE(Decide(p, "anthropic.com.evil.test", 443).allowed);
  c.browser_relay = true;
  p.allow = *NetPresetRules("agent", c);
  EXPECT_TRUE(Decide(p, "bridge.claudeusercontent.com", 443).allowed);
}

TEST(NetPresets, AnUnknownPresetHasNoRules) { EXPECT_FALSE(NetPresetRules("everything", {})); }

TEST(NetPresets, UrlHost) {
  EXPECT_EQ(*UrlHost("http://deb.debian.org/debian"), "deb.debian.org");
  EXPECT_EQ(*UrlHost("https://[2001:db8::1]:8443/x"), "[2001:db8::1]:8443");
  EXPECT_FALSE(UrlHost("deb.debian.org"));
  EXPECT_FALSE(UrlHost("http://user@host/"));
  EXPECT_FALSE(UrlHost("http:///x"));
}

}  // namespace
}  // namespace ss
