// Choosing a private subnet that nothing on the host uses.
#include "subnet.hpp"

#include <gtest/gtest.h>

namespace ss {
namespace {

Ipv4Net Net(const std::string& text) {
  auto n = ParseIpv4Net(text);
  EXPECT_TRUE(n) << text;
  return n.value_or(Ipv4Net{});
}

TEST(Subnet, ParsesAddressesAndNetworks) {
  EXPECT_EQ(Net("10.147.91.7/24").ToString(), "10.147.91.0/24");
  EXPECT_EQ(Net("192.0.2.2").ToString(), "192.0.2.2/32");
  EXPECT_EQ(Net("10.147.91.0/24").GatewayCidr(), "10.147.91.1/24");
  for (const char* bad : {"default", "", "10.1.2/24", "10.1.2.3/33", "10.1.2.3/x", "::1/128"}) {
    EXPECT_FALSE(ParseIpv4Net(bad)) << bad;
  }
}

TEST(Subnet, Overlaps) {
  EXPECT_TRUE(Net("10.0.0.0/8").Overlaps(Net("10.20.30.0/24")));
  EXPECT_TRUE(Net("10.20.30.0/24").Overlaps(Net("10.20.30.5")));
  EXPECT_FALSE(Net("10.20.30.0/24").Overlaps(Net("10.20.31.0/24")));
}

TEST(Subnet, FreeSubnetAvoidsWhatIsTaken) {
  std::vector<Ipv4Net> taken = {Net("192.0.2.0/24"), Net("127.0.0.0/8")};
  for (uint32_t seed = 0; seed < 200; ++seed) {
    auto s = FreeSubnet(taken, seed);
    ASSERT_TRUE(s);
    EXPECT_EQ(s->prefix, 24);
    EXPECT_TRUE(Net("10.0.0.0/8").Overlaps(*s));
    EXPECT_NE(s->ToString(), "10.0.0.0/24");
  }
  EXPECT_EQ(FreeSubnet(taken, 7)->ToString(), FreeSubnet(taken, 7)->ToString());
  EXPECT_NE(FreeSubnet(taken, 7)->ToString(), FreeSubnet(taken, 8)->ToString());
  // The whole of 10/8 routed elsewhere (a VPN, say): the next private range.
  taken.push_back(Net("10.0.0.0/8"));
  EXPECT_TRUE(Net("172.16.0.0/12").Overlaps(*FreeSubnet(taken, 3)));
  taken.push_back(Net("172.16.0.0/12"));
  EXPECT_TRUE(Net("192.168.0.0/16").Overlaps(*FreeSubnet(taken, 3)));
  taken.push_back(Net("192.168.0.0/16"));
  EXPECT_FALSE(FreeSubnet(taken, 3));
}

TEST(Subnet, FreeSubnetSkipsEveryTakenNeighbour) {
  // Only one /24 of 10/8 left free (besides the first and last, never chosen): it is found.
  std::vector<Ipv4Net> taken;
  for (uint32_t i = 0; i < 256; ++i) {
    if (i != 77) taken.push_back(Ipv4Net{(10u << 24) | (i << 16), 16});
  }
  taken.push_back(Ipv4Net{(10u << 24) | (77u << 16), 24});  // 10.77.0.0/24
  for (uint32_t j = 2; j < 256; ++j) {
    if (j != 200) taken.push_back(Ipv4Net{(10u << 24) | (77u << 16) | (j << 8), 24});
  }
  // Left in 10/8: 10.77.1.0/24 and 10.77.200.0/24.
  auto s = FreeSubnet(taken, 12345);
  ASSERT_TRUE(s);
  EXPECT_TRUE(s->ToString() == "10.77.1.0/24" || s->ToString() == "10.77.200.0/24")
      << s->ToString();
}

}  // namespace
}  // namespace ss
