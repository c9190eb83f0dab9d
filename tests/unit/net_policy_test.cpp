// The egress policy: how rules are read, what they match, and what an allowed name may lead to.
#include "net_policy.hpp"

#include "dns_wire.hpp"
#include "error.hpp"
#include "gtest/gtest.h"
#include "host_networks.hpp"

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

// A host as ss-net may find it: loopback, a LAN, a public address of its own on a routed link,
// a VPN, ss's own bridge for a sandbox and Docker's.
HostNetworks Host() {
  auto at = [](std::string name, const char* address, int prefix, bool loopback = false) {
    return InterfaceAddress{name, loopback, *ParseIpAddress(address), prefix};
  };
  return HostNetworksOf({at("lo", "127.0.0.1", 8, true), at("lo", "::1", 128, true),
                         at("eth0", "192.168.1.10", 24), at("eth0", "2001:db8:1::10", 64),
                         at("eth1", "203.0.113.5", 32), at("wg0", "198.18.0.2", 24),
                         at("ssn-1a2b3c4d5e", "10.77.0.1", 24), at("docker0", "172.17.0.1", 16),
                         at("br-0123456789ab", "fd42::1", 64)});
}

NetVerdict At(const NetPolicy& p, std::string_view address, int port = 443) {
  auto ip = ParseIpAddress(address);
  EXPECT_TRUE(ip) << address;
  return ip ? DecideAddress(p, *ip, port, Host()) : NetVerdict{};
}

TEST(NetPolicy, AnAllowedNameNeverLeadsIntoTheHostsNetworks) {
  NetPolicy p = Allow({"example.com", "10.9.0.0/16"}, {}, NetMode::kOpen);
  for (const char* inside : {"127.0.0.1", "10.1.2.3", "172.17.0.1", "192.168.1.1",
                             "169.254.169.254", "100.64.0.1", "0.0.0.0", "224.0.0.1", "::1", "::",
                             "fe80::1", "fd00::1", "ff02::1", "::ffff:127.0.0.1", "64:ff9b:1::1"}) {
    auto ip = ParseIpAddress(inside);
    ASSERT_TRUE(ip) << inside;
    EXPECT_TRUE(IsInternalAddress(*ip)) << inside;
    EXPECT_FALSE(DecideAddress(p, *ip, 443, {}).allowed) << inside;
  }
  EXPECT_TRUE(DecideAddress(p, *ParseIpAddress("10.9.1.1"), 443, {}).allowed);  // named by a rule
  EXPECT_TRUE(DecideAddress(p, *ParseIpAddress("198.51.100.2"), 443, {}).allowed);
  NetPolicy denied = Allow({"example.com"}, {"198.51.100.0/24"});
  EXPECT_FALSE(DecideAddress(denied, *ParseIpAddress("198.51.100.2"), 443, {}).allowed);
}

TEST(NetPolicy, TheHostItselfAndSandboxesAreNeverReachedWhateverTheRulesAndMode) {
  // Every rule that could name them, in every mode that lets anything through.
  for (NetMode mode : {NetMode::kAllowlist, NetMode::kOpen}) {
    NetPolicy p =
        Allow({"127.0.0.1", "127.0.0.0/8", "192.168.1.10", "203.0.113.5", "10.77.0.0/24",
               "172.17.0.0/16", "10.0.0.0/8", "0.0.0.0/0", "[::]/0", "[::1]", "[fd42::]/64"},
              {}, mode);
    for (const char* own : {"127.0.0.1",
                            "127.9.9.9",
                            "0.0.0.0",
                            "0.1.2.3",
                            "::1",
                            "::",
                            "::ffff:127.0.0.1",
                            "::ffff:7f00:2",
                            "::127.0.0.1",
                            "::ffff:0:127.0.0.1",
                            "64:ff9b::127.0.0.1",
                            "64:ff9b::7f00:1",
                            "2002:7f00:1::1",
                            "2001:0:c633:6402:0:f227:80ff:fffe",
                            "64:ff9b:1:7f00:0:100::",
                            "192.168.1.10",
                            "::ffff:192.168.1.10",
                            "203.0.113.5",
                            "64:ff9b::cb00:7105",
                            "2002:cb00:7105::",
                            "198.18.0.2",
                            "2001:db8:1::10"}) {
      NetVerdict v = At(p, own);
      EXPECT_FALSE(v.allowed) << own;
      EXPECT_EQ(v.rule, "host address") << own;
    }
    for (const char* sandbox :
         {"10.77.0.2", "10.77.0.1" /* the gateway: the host's */, "::ffff:10.77.0.2",
          "64:ff9b::a4d:2", "2002:a4d:2::", "172.17.0.2", "::ffff:0:172.17.5.5", "fd42::5"}) {
      NetVerdict v = At(p, sandbox);
      EXPECT_FALSE(v.allowed) << sandbox;
      EXPECT_NE(v.rule.find(sandbox == std::string("10.77.0.1") ? "host" : "sandbox"),
                std::string::npos)
          << sandbox << ": " << v.rule;
    }
  }
  NetVerdict v = At(Allow({}, {}, NetMode::kOpen), "64:ff9b::a4d:7", 22);
  EXPECT_EQ(v.rule, "sandbox network");
  EXPECT_EQ(v.address, "10.77.0.7");
  EXPECT_EQ(v.network, "10.77.0.0/24 on ssn-1a2b3c4d5e");
  v = At(Allow({}, {}, NetMode::kOpen), "::ffff:127.0.0.1");
  EXPECT_EQ(v.address, "127.0.0.1");
  // Past the host: the internet, and through NAT64 or 6to4 to it.
  for (const char* outside : {"198.51.100.2", "64:ff9b::c633:6402", "2002:c633:6402::1",
                              "2001:db8:2::1", "203.0.113.6"}) {
    EXPECT_TRUE(At(Allow({}, {}, NetMode::kOpen), outside).allowed) << outside;
    EXPECT_EQ(At(Allow({}), outside).rule, "public address") << outside;
  }
  EXPECT_FALSE(At(Allow({}, {}, NetMode::kNone), "198.51.100.2").allowed);
}

TEST(NetPolicy, AnAllowRuleThatNothingCouldPassIsKnownAsSuch) {
  auto why = [](const char* text) { return NeverAllowed(ParseNetRule(text), Host()); };
  for (const char* own : {"127.0.0.1", "127.0.0.0/8", "127.9.9.9:5432", "[::1]", "0.0.0.0",
                          "192.168.1.10", "203.0.113.5", "[2001:db8:1::10]", "198.18.0.2:22",
                          "[::ffff:127.0.0.1]", "[2002:7f00:1::]"}) {
    EXPECT_EQ(why(own), "the host's own address") << own;
  }
  EXPECT_EQ(why("10.77.0.9"), "a sandbox network (10.77.0.0/24 on ssn-1a2b3c4d5e)");
  EXPECT_EQ(why("172.17.0.0/16"), "a sandbox network (172.17.0.0/16 on docker0)");
  // Networks with anything else in them, names and the LAN (which a rule may open) are rules.
  for (const char* rule : {"0.0.0.0/0", "127.0.0.0/7", "192.168.1.20", "192.168.1.0/24",
                           "10.77.0.0/16", "example.com", "*.example.com", "[2001:db8:1::11]"}) {
    EXPECT_EQ(why(rule), "") << rule;
  }
}

TEST(NetPolicy, TheHostsLanOnlyByARuleThatNamesItAndDenyRulesSeeEveryForm) {
  NetPolicy open = Allow({}, {}, NetMode::kOpen);
  for (const char* lan : {"192.168.1.20", "198.18.0.7", "2001:db8:1::20", "64:ff9b::c0a8:114",
                          "::ffff:198.18.0.7", "10.1.2.3", "64:ff9b::a01:203"}) {
    NetVerdict v = At(open, lan);
    EXPECT_FALSE(v.allowed) << lan;
    EXPECT_EQ(v.rule, "internal address") << lan;
  }
  EXPECT_EQ(At(open, "64:ff9b::c0a8:114").address, "192.168.1.20");
  // A rule inside the network opens it; one that merely covers everything does not.
  for (const char* rule :
       {"192.168.1.20", "192.168.1.20:443", "192.168.1.0/24", "192.168.0.0/16"}) {
    EXPECT_TRUE(At(Allow({rule}, {}, NetMode::kOpen), "192.168.1.20").allowed) << rule;
    EXPECT_TRUE(At(Allow({rule}), "64:ff9b::c0a8:114").allowed) << rule;
  }
  EXPECT_FALSE(At(Allow({"192.168.1.20:22"}), "192.168.1.20", 443).allowed);
  EXPECT_TRUE(At(Allow({"198.18.0.0/24"}), "198.18.0.7").allowed);
  EXPECT_FALSE(At(Allow({"198.18.0.0/15"}), "198.18.0.7").allowed);  // wider than the LAN
  EXPECT_EQ(At(Allow({"198.18.0.0/24"}), "198.18.0.7").rule, "allow 198.18.0.0/24");
  for (const char* wide : {"0.0.0.0/0", "192.0.0.0/2", "[::]/0"}) {
    EXPECT_FALSE(At(Allow({wide}, {}, NetMode::kOpen), "192.168.1.20").allowed) << wide;
    EXPECT_FALSE(At(Allow({wide}, {}, NetMode::kOpen), "2001:db8:1::20").allowed) << wide;
  }
  // A denied address is denied however it is written.
  NetPolicy denied = Allow({}, {"198.51.100.2"}, NetMode::kOpen);
  for (const char* form :
       {"198.51.100.2", "::ffff:198.51.100.2", "64:ff9b::c633:6402",
        "2002:c633:6402::", "::198.51.100.2", "::ffff:0:198.51.100.2", "2001:0:c633:6402::"}) {
    NetVerdict v = At(denied, form);
    EXPECT_FALSE(v.allowed) << form;
    EXPECT_EQ(v.rule, "deny 198.51.100.2") << form;
  }
}

TEST(NetPolicy, AnAnswerOfTheResolverIsDecidedAsTheAddressItMaps) {
  // What Resolve() reads: an AAAA record of ::ffff:127.0.0.1, and one of ::ffff:10.77.0.2.
  std::string answer = DnsQuery(7, "allowed.test", kDnsTypeAaaa);
  answer[2] = '\x81';
  answer[3] = '\x80';
  answer[7] = 2;
  for (int last : {1, 2}) {
    std::string data(16, '\0');
    data[10] = data[11] = '\xff';
    data[12] = last == 1 ? 127 : 10;
    data[13] = last == 1 ? 0 : 77;
    data[15] = static_cast<char>(last);
    answer += std::string("\xc0\x0c\0\x1c\0\1\0\0\0\x3c\0\x10", 12) + data;
  }
  auto addresses = DnsAddresses(answer);
  ASSERT_EQ(addresses.size(), 2u);
  EXPECT_EQ(addresses[0].family, 4);
  NetPolicy p = Allow({"allowed.test"}, {}, NetMode::kOpen);
  EXPECT_EQ(DecideAddress(p, addresses[0], 443, Host()).rule, "host address");
  EXPECT_EQ(DecideAddress(p, addresses[1], 443, Host()).rule, "sandbox network");
}

TEST(HostNetworks, ReadFromTheInterfaces) {
  HostNetworks h = Host();
  auto has = [](const std::vector<HostNetwork>& list, std::string_view network) {
    for (const HostNetwork& n : list) {
      if (n.network.ToString() == network) return true;
    }
    return false;
  };
  EXPECT_TRUE(has(h.own, "127.0.0.0/8"));
  EXPECT_TRUE(has(h.own, "192.168.1.10/32"));
  EXPECT_TRUE(has(h.own, "10.77.0.1/32"));
  EXPECT_TRUE(has(h.sandboxes, "10.77.0.0/24"));
  EXPECT_TRUE(has(h.sandboxes, "172.17.0.0/16"));
  EXPECT_TRUE(has(h.sandboxes, "fd42::/64"));
  EXPECT_TRUE(has(h.local, "192.168.1.0/24"));
  EXPECT_TRUE(has(h.local, "2001:db8:1::/64"));
  EXPECT_FALSE(has(h.local, "203.0.113.5/32"));  // a routed /32: its own address, no network
  EXPECT_TRUE(IsSandboxInterface("ssn-0123456789"));
  EXPECT_TRUE(IsSandboxInterface("lxdbr0"));
  EXPECT_TRUE(IsSandboxInterface("podman1"));
  EXPECT_FALSE(IsSandboxInterface("eth0"));
  EXPECT_FALSE(IsSandboxInterface("wlp2s0"));
  // The far end of a point-to-point link is on the host's network, not the host.
  HostNetworks tunnel =
      HostNetworksOf({{"ppp0", false, *ParseIpAddress("100.70.0.2"), 32},
                      {"ppp0", false, *ParseIpAddress("198.51.100.1"), 32, /*peer=*/true}});
  EXPECT_TRUE(has(tunnel.own, "100.70.0.2/32"));
  EXPECT_FALSE(has(tunnel.own, "198.51.100.1/32"));
  EXPECT_TRUE(has(tunnel.local, "198.51.100.1/32"));
  // And this machine's, as the kernel has them: loopback is the host's.
  HostNetworksWatch watch;
  const HostNetworks& now = watch.Current();
  NetPolicy open = Allow({"127.0.0.1"}, {}, NetMode::kOpen);
  EXPECT_EQ(DecideAddress(open, *ParseIpAddress("127.0.0.1"), 80, now).rule, "host address");
  std::vector<InterfaceAddress> read = ReadInterfaceAddresses();
  ASSERT_FALSE(read.empty());
  for (const InterfaceAddress& a : read) {
    if (a.peer) continue;
    EXPECT_EQ(DecideAddress(open, a.address, 80, watch.Current()).rule, "host address")
        << a.interface << " " << a.address.ToString();
  }
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
