// The egress policy: how rules are read, what they match, and what an allowed name may lead to.
#include "net_policy.hpp"

#include "error.hpp"
#include "gtest/gtest.h"

namespace ss {
namespace {

NetPolicy Allow(std::vector<std::string> allow, std::vector<std::string> deny = {},
                NetMode mode = NetMode::kAllowlist) {
  NetPolicy p;
  p.mode = mode;
  for (const auto& r : allow) p.allow.push_back(ParseNetRule(r));
  for (const auto& r : deny) p.deny.push_back(ParseNetRule(r));
  return p;
}

TEST(NetRule, ReadsEveryForm) {
  EXPECT_EQ(ParseNetRule("Example.COM.").text, "example.com");
  EXPECT_EQ(ParseNetRule("*.example.com").kind, NetRule::kWildcard);
  EXPECT_EQ(ParseNetRule("*.example.com:443").text, "*.example.com:443");
  EXPECT_EQ(ParseNetRule("example.com:443").port, 443);
  EXPECT_EQ(ParseNetRule("10.1.2.3/8").text, "10.0.0.0/8");
  EXPECT_EQ(ParseNetRule("10.1.2.3").text, "10.1.2.3");
  EXPECT_EQ(ParseNetRule("10.1.2.3:22").text, "10.1.2.3:22");
  EXPECT_EQ(ParseNetRule("[2001:db8::1]/32").text, "[2001:db8::]/32");
  EXPECT_EQ(ParseNetRule("[::1]:8080").text, "[::1]:8080");
  EXPECT_EQ(ParseNetRule(" github.com ").text, "github.com");
  // Hyphens inside labels, as most of the web's names have them.
  EXPECT_EQ(ParseNetRule("release-assets.githubusercontent.com").text,
            "release-assets.githubusercontent.com");
  EXPECT_EQ(ParseNetRule("*.my-cdn.example-1.com:443").text, "*.my-cdn.example-1.com:443");
  EXPECT_EQ(ParseNetRule("x--y_z.test").text, "x--y_z.test");
}

TEST(NetRule, RefusesWhatIsNotARule) {
  for (const char* bad : {"",
                          " ",
                          "exa mple.com",
                          "*example.com",
                          "a.*.com",
                          "example.com:0",
                          "example.com:65536",
                          "example.com:x",
                          "10.0.0.0/33",
                          "2001:db8::1",
                          "[2001:db8::1",
                          "[::1]x",
                          "example.com/8",
                          "a..b",
                          "-",
                          "-a.test",
                          "a-.test",
                          "a.-.test",
                          "a:b.test",
                          "a@b.test",
                          "a[b].test",
                          "a^b.test",
                          "*",
                          "a;rm -rf /",
                          "ex\nample.com",
                          "[::1]:",
                          "example.com:"}) {
    EXPECT_THROW(ParseNetRule(bad), Error) << bad;
  }
  try {
    ParseNetRule("*example.com");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitDataErr);
    EXPECT_STREQ(e.what(),
                 "invalid network rule '*example.com': '*' only as the whole first label: "
                 "*.example.com");
    EXPECT_EQ(e.hints().size(), 1u);
  }
}

TEST(NetPolicy, NamesMatchExactlyAndWildcardsOnlyBelow) {
  NetPolicy p = Allow({"example.com", "*.github.com"});
  EXPECT_TRUE(Decide(p, "example.com", 443).allowed);
  EXPECT_TRUE(Decide(p, "EXAMPLE.com.", 443).allowed);
  EXPECT_FALSE(Decide(p, "www.example.com", 443).allowed);
  EXPECT_FALSE(Decide(p, "example.com.evil.test", 443).allowed);
  EXPECT_FALSE(Decide(p, "badexample.com", 443).allowed);
  EXPECT_TRUE(Decide(p, "api.github.com", 443).allowed);
  EXPECT_TRUE(Decide(p, "a.b.github.com", 443).allowed);
  EXPECT_FALSE(Decide(p, "github.com", 443).allowed);
  EXPECT_FALSE(Decide(p, "evilgithub.com", 443).allowed);
  EXPECT_EQ(Decide(p, "api.github.com", 443).rule, "allow *.github.com");
  EXPECT_EQ(Decide(p, "other.test", 443).rule, "mode allowlist");
  EXPECT_EQ(Decide(p, "bad name", 443).rule, "invalid name");
}

TEST(NetPolicy, PortsAndLookups) {
  NetPolicy p = Allow({"example.com:443"});
  EXPECT_TRUE(Decide(p, "example.com", 443).allowed);
  EXPECT_FALSE(Decide(p, "example.com", 80).allowed);
  // A lookup asks about the name alone: a rule for one of its ports lets it resolve.
  EXPECT_TRUE(Decide(p, "example.com", 0).allowed);
}

TEST(NetPolicy, AddressesNeedANetworkRule) {
  NetPolicy p = Allow({"example.com", "198.51.100.0/24", "[2001:db8::]/32"});
  EXPECT_TRUE(Decide(p, "198.51.100.7", 443).allowed);
  EXPECT_FALSE(Decide(p, "198.51.101.7", 443).allowed);
  EXPECT_TRUE(Decide(p, "2001:db8::5", 443).allowed);
  EXPECT_TRUE(Decide(p, "::ffff:198.51.100.7", 443).allowed);  // IPv4-mapped is IPv4
  EXPECT_FALSE(Decide(p, "2001:db9::5", 443).allowed);
}

TEST(NetPolicy, DenyWinsAndModesDecide) {
  NetPolicy p = Allow({"*.example.com"}, {"secret.example.com"});
  EXPECT_FALSE(Decide(p, "secret.example.com", 443).allowed);
  EXPECT_EQ(Decide(p, "secret.example.com", 443).rule, "deny secret.example.com");
  EXPECT_TRUE(Decide(p, "www.example.com", 443).allowed);
  NetPolicy open = Allow({}, {"evil.test"}, NetMode::kOpen);
  EXPECT_TRUE(Decide(open, "anything.test", 443).allowed);
  EXPECT_FALSE(Decide(open, "evil.test", 443).allowed);
  NetPolicy none = Allow({"example.com"}, {}, NetMode::kNone);
  EXPECT_FALSE(Decide(none, "example.com", 443).allowed);
  EXPECT_EQ(Decide(none, "example.com", 443).rule, "mode none");
}

TEST(NetPolicy, AnAllowedNameNeverLeadsIntoTheHostsNetworks) {
  NetPolicy p = Allow({"example.com", "10.9.0.0/16"}, {}, NetMode::kOpen);
  for (const char* inside :
       {"127.0.0.1", "10.1.2.3", "172.17.0.1", "192.168.1.1", "169.254.169.254", "100.64.0.1",
        "0.0.0.0", "224.0.0.1", "::1", "::", "fe80::1", "fd00::1", "ff02::1", "::ffff:127.0.0.1"}) {
    auto ip = ParseIpAddress(inside);
    ASSERT_TRUE(ip) << inside;
    EXPECT_TRUE(IsInternalAddress(*ip)) << inside;
    EXPECT_FALSE(DecideAddress(p, *ip, 443).allowed) << inside;
  }
  EXPECT_TRUE(DecideAddress(p, *ParseIpAddress("10.9.1.1"), 443).allowed);  // named by a rule
  EXPECT_TRUE(DecideAddress(p, *ParseIpAddress("198.51.100.2"), 443).allowed);
  NetPolicy denied = Allow({"example.com"}, {"198.51.100.0/24"});
  EXPECT_FALSE(DecideAddress(denied, *ParseIpAddress("198.51.100.2"), 443).allowed);
}

TEST(NetPolicy, JsonRoundTripAndDamage) {
  NetPolicy p = Allow({"example.com", "*.github.com:443", "10.0.0.0/8"}, {"evil.test"});
  NetPolicy back = NetPolicyFromJson(NetPolicyToJson(p));
  EXPECT_EQ(NetPolicyToJson(back), NetPolicyToJson(p));
  for (const char* bad :
       {"", "[]", "{}", R"({"mode":"wide"})", R"({"mode":"open","allow":"x"})",
        R"({"mode":"open","allow":[1]})", R"({"mode":"open","deny":["a b"]})", "{\"mode\":"}) {
    EXPECT_THROW(NetPolicyFromJson(bad), Error) << bad;
  }
}

}  // namespace
}  // namespace ss
