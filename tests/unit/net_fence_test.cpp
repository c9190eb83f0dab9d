// The fence's nftables script: what it redirects, what it refuses, and what it never writes.
#include "net_fence.hpp"

#include "error.hpp"
#include "fs.hpp"
#include "gtest/gtest.h"
#include "strings.hpp"

namespace ss {
namespace {

NetFence Fence() { return {"my-box", "ssn-0123456789", "10.9.8.1", 40001, 40002, 40003, false}; }

TEST(NetFence, RedirectsLookupsWebAndTheProxyAndRefusesTheRest) {
  std::string s = NetFenceScript(Fence());
  std::vector<std::string> lines = SplitLines(s);
  auto has = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) != lines.end();
  };
  const std::string in = "add rule inet ss sandbox-my-box-in iifname \"ssn-0123456789\" ";
  const std::string pre = "add rule inet ss sandbox-my-box-pre iifname \"ssn-0123456789\" ";
  const std::string fwd = "add rule inet ss sandbox-my-box-fwd ";
  EXPECT_TRUE(has(pre + "ip daddr 10.9.8.1 tcp dport 3128 dnat ip to 10.9.8.1:40001"));
  EXPECT_TRUE(has(pre + "meta l4proto { tcp, udp } th dport 53 dnat ip to 10.9.8.1:40003"));
  EXPECT_TRUE(has(pre + "tcp dport { 80, 443 } dnat ip to 10.9.8.1:40002"));
  EXPECT_TRUE(
      has(in + "ct status dnat ip daddr 10.9.8.1 tcp dport { 40001, 40002, 40003 } accept"));
  EXPECT_TRUE(has(in + "meta l4proto tcp reject with tcp reset"));
  EXPECT_TRUE(has(in + "reject with icmpx admin-prohibited"));
  EXPECT_TRUE(has(fwd + "iifname \"ssn-0123456789\" reject with icmpx admin-prohibited"));
  EXPECT_TRUE(has(fwd + "oifname \"ssn-0123456789\" drop"));
  EXPECT_EQ(s.find("udp dport 67"), std::string::npos);
  // Replacing is one transaction: the chains are declared, flushed and refilled.
  EXPECT_TRUE(has("flush chain inet ss sandbox-my-box-in"));
  NetFence dhcp = Fence();
  dhcp.dhcp = true;
  EXPECT_NE(NetFenceScript(dhcp).find("udp sport 68 udp dport 67 accept"), std::string::npos);
}

TEST(NetFence, ANewConnectionOverTheSandboxsShareIsDroppedBeforeItIsTracked) {
  NetFence f = Fence();
  EXPECT_EQ(NetFenceScript(f).find("ct count"), std::string::npos);  // no share: no limit
  f.connections = 300;
  std::vector<std::string> lines = SplitLines(NetFenceScript(f));
  auto at = [&](const std::string& line) {
    return std::find(lines.begin(), lines.end(), line) - lines.begin();
  };
  const std::string in = "add rule inet ss sandbox-my-box-in iifname \"ssn-0123456789\" ";
  const std::string over = in + "ct state new ct count over 300 ";
  auto log = at(over +
                "limit rate 1/second burst 1 packets log prefix \"ss: sandbox my-box is over its "
                "300 connections: \" level warn");
  auto drop = at(over + "counter drop");
  ASSERT_LT(drop, static_cast<long>(lines.size()));
  ASSERT_LT(log, drop);
  // After the replies to what is already tracked, before anything new is accepted.
  EXPECT_LT(at(in + "ct state established,related accept"), log);
  EXPECT_LT(drop,
            at(in + "ct status dnat ip daddr 10.9.8.1 tcp dport { 40001, 40002, 40003 } accept"));
  EXPECT_LT(drop, at(in + "ct status dnat ip daddr 10.9.8.1 udp dport 40003 accept"));
  f.connections = -1;
  EXPECT_THROW(NetFenceScript(f), Error);
}

TEST(NetFence, AShareIsNeverMoreThanAQuarterOfTheHostsTable) {
  EXPECT_EQ(ConntrackShare(0), 0);
  EXPECT_GE(ConntrackShare(100), 1);
  EXPECT_LE(ConntrackShare(100), 100);
  if (auto max = ReadFileIfExists("/proc/sys/net/netfilter/nf_conntrack_max")) {
    int64_t table = *ParseDecimal(Trim(*max));
    EXPECT_LE(ConntrackShare(1 << 30), std::max<int64_t>(1, table / 4));
  }
}

TEST(NetFence, RefusesWhatCouldNotBeWrittenSafely) {
  auto bad = [](auto change) {
    NetFence f = Fence();
    change(f);
    EXPECT_THROW(NetFenceScript(f), Error);
  };
  bad([](NetFence& f) { f.interface = "a\" accept; #"; });
  bad([](NetFence& f) { f.interface = "much-too-long-name"; });
  bad([](NetFence& f) { f.interface = ""; });
  bad([](NetFence& f) { f.gateway = "::1"; });
  bad([](NetFence& f) { f.gateway = "10.0.0.1; flush ruleset"; });
  bad([](NetFence& f) { f.sandbox = "Box;"; });
  bad([](NetFence& f) { f.dns_port = 0; });
  bad([](NetFence& f) { f.proxy_port = 70000; });
}

TEST(NetFence, ChainsOfAGoneSandboxOnTheSameInterfaceAreStale) {
  const std::string ruleset = R"(table inet ss {
	chain sandbox-old-box-pre {
		type nat hook prerouting priority dstnat - 5; policy accept;
		iifname "cni-podman1" ip daddr 10.125.108.1 tcp dport 3128 dnat ip to 10.125.108.1:41763
	}
	chain sandbox-old-box-in {
		iifname "cni-podman1" ct state established,related accept
	}
	chain sandbox-old-box-fwd {
		oifname "cni-podman1" ct state established,related accept
	}
	chain sandbox-other-pre {
		iifname "cni-podman2" tcp dport { 80, 443 } dnat ip to 10.1.1.1:4000
	}
	chain sandbox-my-box-in {
		iifname "cni-podman1" ct state established,related accept
	}
	chain sandbox-cni-podman10-in {
		iifname "cni-podman10" reject
	}
}
)";
  EXPECT_EQ(StaleFenceChains(ruleset, "cni-podman1", "my-box"),
            (std::vector<std::string>{"sandbox-old-box-pre", "sandbox-old-box-in",
                                      "sandbox-old-box-fwd"}));
  EXPECT_TRUE(StaleFenceChains(ruleset, "cni-podman3", "my-box").empty());
  EXPECT_TRUE(StaleFenceChains("", "cni-podman1", "my-box").empty());
}

}  // namespace
}  // namespace ss
