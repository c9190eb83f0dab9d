// IP addresses: the one way to make them (text, bytes), IPv4-mapped addresses read as IPv4, the
// IPv4 addresses other IPv6 forms carry, and the forms of IPv4 that are neither address nor name.
#include "ip_address.hpp"

#include "gtest/gtest.h"
#include "net_policy.hpp"
#include "strings.hpp"

namespace ss {
namespace {

std::string Shown(std::string_view text) {
  auto a = ParseIpAddress(text);
  return a ? Cat(a->family, " ", a->ToString()) : "none";
}

TEST(IpAddress, TextInStrictFormsOnlyAndMappedIsIpv4) {
  EXPECT_EQ(Shown("127.0.0.1"), "4 127.0.0.1");
  EXPECT_EQ(Shown("[2001:db8::1]"), "6 2001:db8::1");
  EXPECT_EQ(Shown("::ffff:127.0.0.1"), "4 127.0.0.1");
  EXPECT_EQ(Shown("[::ffff:7f00:1]"), "4 127.0.0.1");
  EXPECT_EQ(Shown("::FFFF:10.1.2.3"), "4 10.1.2.3");
  EXPECT_EQ(Shown("0:0:0:0:0:ffff:a00:1"), "4 10.0.0.1");
  // Other ways of writing an IPv4 address are not addresses here...
  for (const char* other : {"2130706433", "0x7f000001", "0x7f.1", "0177.0.0.1", "127.1", "127.0.1",
                            "127.0.0.01", "127.0.0.1.", " 127.0.0.1", "127.0.0.1 ", "1.2.3.4.5",
                            "256.0.0.1", "fe80::1%eth0", "::ffff:127.1", "[127.0.0.1", ""}) {
    EXPECT_EQ(Shown(other), "none") << other;
  }
  // ...nor names: nothing that ends in a number is looked up.
  for (const char* numeric : {"2130706433", "0x7f000001", "0x7f.1", "0X7F.0x1", "0177.0.0.1",
                              "127.1", "127.0.0.1", "a.123", "example.0x", "localhost.0"}) {
    EXPECT_FALSE(NormaliseHostName(numeric)) << numeric;
  }
  for (const char* name : {"0x7f.example", "123.example.com", "a1.b2", "1password.com", "x.1a"}) {
    EXPECT_TRUE(NormaliseHostName(name)) << name;
  }
}

TEST(IpAddress, BytesAsADnsAnswerHasThem) {
  auto v4 = IpAddressFromBytes(std::string("\x7f\0\0\x01", 4));
  ASSERT_TRUE(v4);
  EXPECT_EQ(v4->family, 4);
  EXPECT_EQ(v4->ToString(), "127.0.0.1");
  std::string mapped(16, '\0');
  mapped[10] = mapped[11] = '\xff';
  mapped[12] = 10;
  mapped[15] = 5;
  auto m = IpAddressFromBytes(mapped);
  ASSERT_TRUE(m);
  EXPECT_EQ(m->family, 4);
  EXPECT_EQ(m->ToString(), "10.0.0.5");
  EXPECT_EQ(*m, *ParseIpAddress("10.0.0.5"));
  std::string v6(16, '\0');
  v6[0] = 0x20;
  v6[1] = 0x01;
  EXPECT_EQ(IpAddressFromBytes(v6)->family, 6);
  EXPECT_FALSE(IpAddressFromBytes(""));
  EXPECT_FALSE(IpAddressFromBytes(std::string(5, '\0')));
  EXPECT_FALSE(IpAddressFromBytes(std::string(15, '\0')));
}

std::string Embedded(std::string_view text) {
  std::string out;
  for (const IpAddress& a : EmbeddedIpv4(*ParseIpAddress(text)))
    out += (out.empty() ? "" : " ") + a.ToString();
  return out;
}

TEST(IpAddress, TheIpv4AddressesOtherIpv6FormsCarry) {
  EXPECT_EQ(Embedded("::127.0.0.1"), "127.0.0.1");  // IPv4-compatible
  EXPECT_EQ(Embedded("::10.1.2.3"), "10.1.2.3");
  EXPECT_EQ(Embedded("::"), "");                           // unspecified, not IPv4
  EXPECT_EQ(Embedded("::1"), "");                          // loopback, not IPv4
  EXPECT_EQ(Embedded("::ffff:0:127.0.0.1"), "127.0.0.1");  // IPv4-translated
  EXPECT_EQ(Embedded("64:ff9b::127.0.0.1"), "127.0.0.1");  // NAT64
  EXPECT_EQ(Embedded("64:ff9b::c633:6402"), "198.51.100.2");
  EXPECT_EQ(Embedded("2002:7f00:1::"), "127.0.0.1");  // 6to4
  EXPECT_EQ(Embedded("2002:a00:5:1::1"), "10.0.0.5");
  // Teredo: the server, then the client (its bits flipped).
  EXPECT_EQ(Embedded("2001:0:c633:6402:0:f227:80ff:fffe"), "198.51.100.2 127.0.0.1");
  // NAT64's local-use prefix, every length of translator prefix.
  EXPECT_EQ(Embedded("64:ff9b:1:7f00:0:100::"), "127.0.0.1 0.0.1.0 0.1.0.0 0.0.0.0");
  EXPECT_EQ(Embedded("64:ff9b:1:7f:0:1::"), "0.127.0.0 127.0.0.1 0.0.1.0 0.0.0.0");
  EXPECT_EQ(Embedded("64:ff9b:1:0:7f:0:100:0"), "0.0.127.0 0.127.0.0 127.0.0.1 1.0.0.0");
  EXPECT_EQ(Embedded("64:ff9b:1::7f00:1"), "0.0.0.0 0.0.0.0 0.0.0.127 127.0.0.1");
  EXPECT_EQ(Embedded("2001:db8::127.0.0.1"), "");
  EXPECT_EQ(Embedded("2001:1::1"), "");
  EXPECT_EQ(Embedded("127.0.0.1"), "");
  // Made by hand, an IPv4-mapped IPv6 address still leads to its IPv4 address.
  IpAddress mapped = *ParseIpAddress("::1");
  mapped.bytes = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 127, 0, 0, 1};
  ASSERT_EQ(EmbeddedIpv4(mapped).size(), 1u);
  EXPECT_EQ(EmbeddedIpv4(mapped)[0].ToString(), "127.0.0.1");
}

TEST(IpAddress, Networks) {
  auto n = ParseIpNetwork("10.1.2.3/8");
  ASSERT_TRUE(n);
  EXPECT_EQ(n->ToString(), "10.0.0.0/8");
  EXPECT_TRUE(n->Contains(*ParseIpAddress("10.255.0.1")));
  EXPECT_FALSE(n->Contains(*ParseIpAddress("11.0.0.1")));
  EXPECT_FALSE(n->Contains(*ParseIpAddress("::a00:1")));
  EXPECT_TRUE(n->Covers(*ParseIpNetwork("10.9.0.0/16")));
  EXPECT_FALSE(n->Covers(*ParseIpNetwork("0.0.0.0/0")));
  EXPECT_FALSE(ParseIpNetwork("10.0.0.0/33"));
  EXPECT_FALSE(ParseIpNetwork("10.0.0.0"));
  EXPECT_EQ(ParseIpNetwork("[fd00::1]/8")->ToString(), "fd00::/8");
  EXPECT_TRUE(ParseIpNetwork("fe80::/10")->Contains(*ParseIpAddress("fe80::1")));
  EXPECT_EQ(IpNetwork::Single(*ParseIpAddress("::1")).prefix, 128);
}

}  // namespace
}  // namespace ss
