// The resolver's view of DNS messages: queries read, replies made, answers matched to questions,
// and hostile messages (compression in the question, overlong names, damage) refused.
#include "dns_wire.hpp"

#include <random>

#include "gtest/gtest.h"

namespace ss {
namespace {

TEST(DnsWire, ReadsAQueryAndMakesADataFreeReply) {
  std::string q = DnsQuery(0x1234, "API.Example.com", kDnsTypeAaaa);
  auto parsed = ParseDnsQuery(q);
  ASSERT_TRUE(parsed);
  EXPECT_EQ(parsed->id, 0x1234);
  EXPECT_EQ(parsed->name, "api.example.com");
  EXPECT_TRUE(parsed->host_name);
  EXPECT_EQ(parsed->type, kDnsTypeAaaa);
  EXPECT_EQ(parsed->klass, 1);
  EXPECT_EQ(parsed->end, q.size());
  std::string r = DnsReply(q, *parsed, kDnsNxDomain);
  EXPECT_EQ(r.size(), q.size());
  EXPECT_EQ(static_cast<uint8_t>(r[2]) & 0x80, 0x80);  // a response
  EXPECT_EQ(static_cast<uint8_t>(r[3]) & 0x0f, kDnsNxDomain);
  EXPECT_EQ(r.substr(4, 2), std::string("\0\1", 2));
  EXPECT_EQ(r.substr(6, 6), std::string(6, '\0'));  // nothing but the question
  EXPECT_TRUE(DnsAnswers(r, q, *parsed));
  std::string other = r;
  other[1] ^= 1;
  EXPECT_FALSE(DnsAnswers(other, q, *parsed));
  EXPECT_FALSE(DnsAnswers(DnsReply(DnsQuery(0x1234, "api.example.org", kDnsTypeAaaa),
                                   *ParseDnsQuery(DnsQuery(0x1234, "api.example.org", 28)), 0),
                          q, *parsed));
  EXPECT_FALSE(DnsAnswers(q, q, *parsed));  // the query itself is no answer
}

TEST(DnsWire, NamesWithBytesNoHostNameHasAreMarked) {
  std::string q = DnsQuery(1, "x.example.com", kDnsTypeA);
  q[13] = '.';  // the label "x" becomes "." : "..example.com" is not a host name
  auto parsed = ParseDnsQuery(q);
  ASSERT_TRUE(parsed);
  EXPECT_FALSE(parsed->host_name);
  q[13] = '\x01';
  parsed = ParseDnsQuery(q);
  ASSERT_TRUE(parsed);
  EXPECT_FALSE(parsed->host_name);
  EXPECT_EQ(parsed->name.find('\x01'), std::string::npos);  // shown escaped
}

TEST(DnsWire, RefusesWhatIsNotOneStandardQuestion) {
  std::string q = DnsQuery(1, "example.com", kDnsTypeA);
  std::string response = q;
  response[2] |= '\x80';
  std::string notify = q;
  notify[2] = static_cast<char>(4 << 3);
  std::string two = q;
  two[5] = 2;
  std::string with_answer = q;
  with_answer[7] = 1;
  std::string compressed = q.substr(0, 12) + std::string("\xc0\x0c", 2) + q.substr(q.size() - 4);
  std::string cut = q.substr(0, q.size() - 1);
  std::string long_label = q.substr(0, 12) + std::string(1, 64) + std::string(64, 'a') +
                           std::string(1, 0) + q.substr(q.size() - 4);
  std::string long_name = q.substr(0, 12);
  for (int i = 0; i < 5; ++i) long_name += std::string(1, 60) + std::string(60, 'a');
  long_name += std::string(1, 0) + q.substr(q.size() - 4);
  for (const std::string& bad : {response, notify, two, with_answer, compressed, cut, long_label,
                                 long_name, std::string(), std::string(11, '\0')}) {
    EXPECT_FALSE(ParseDnsQuery(bad));
  }
}

TEST(DnsWire, ReadsAddressesFromAnAnswer) {
  std::string q = DnsQuery(7, "example.com", kDnsTypeA);
  std::string a = q;
  a[2] = '\x81';
  a[3] = '\x80';
  a[7] = 3;  // a CNAME, then two A records, names compressed
  auto rr = [](uint16_t type, const std::string& data) {
    return std::string("\xc0\x0c", 2) + std::string(1, type >> 8) + std::string(1, type & 0xff) +
           std::string("\0\1\0\0\0\x3c", 6) + std::string(1, data.size() >> 8) +
           std::string(1, data.size() & 0xff) + data;
  };
  a += rr(kDnsTypeCname, std::string("\3www\xc0\x0c", 6));
  a += rr(kDnsTypeA, std::string("\xc6\x33\x64\x02", 4));
  a += rr(kDnsTypeA, std::string("\xc6\x33\x64\x03", 4));
  auto addresses = DnsAddresses(a);
  ASSERT_EQ(addresses.size(), 2u);
  EXPECT_EQ(addresses[0].ToString(), "198.51.100.2");
  std::string nx = a;
  nx[3] = '\x83';
  EXPECT_TRUE(DnsAddresses(nx).empty());
  EXPECT_TRUE(DnsAddresses(a.substr(0, a.size() - 2)).empty());  // cut short
  std::mt19937 rng(99);
  for (int round = 0; round < 20000; ++round) {
    std::string m = a;
    for (int e = 1 + rng() % 3; e > 0; --e) {
      if (rng() % 2) {
        m[rng() % m.size()] = static_cast<char>(rng());
      } else {
        m.resize(rng() % (m.size() + 1));
      }
      if (m.empty()) m = "x";
    }
    for (const IpAddress& got : DnsAddresses(m)) {
      EXPECT_TRUE(got.family == 4 || got.family == 6);
    }
    if (auto p = ParseDnsQuery(m)) {
      EXPECT_LE(p->end, m.size());
    }
  }
}

TEST(DnsWire, TimesToLiveAreCappedInPlace) {
  std::string a = DnsQuery(7, "example.com", kDnsTypeA);
  a[2] = '\x81';
  a[3] = '\x80';
  a[7] = 2;
  auto rr = [](const std::string& ttl, const std::string& data) {
    return std::string("\xc0\x0c\0\1\0\1", 6) + ttl + std::string(1, 0) +
           std::string(1, static_cast<char>(data.size())) + data;
  };
  a += rr(std::string("\0\0\x0e\x10", 4), std::string("\xc6\x33\x64\x02", 4));  // an hour
  a += rr(std::string("\0\0\0\0", 4), std::string("\xc6\x33\x64\x03", 4));      // none
  std::string capped = a;
  ASSERT_TRUE(CapDnsTtls(capped, 1));
  EXPECT_EQ(capped.substr(a.size() - 26, 4), std::string("\0\0\0\1", 4));
  EXPECT_EQ(capped.substr(a.size() - 10, 4), std::string("\0\0\0\0", 4));
  EXPECT_EQ(DnsAddresses(capped), DnsAddresses(a));
  std::string cut = a.substr(0, a.size() - 3);
  EXPECT_FALSE(CapDnsTtls(cut, 1));
  std::mt19937 rng(7);
  for (int round = 0; round < 20000; ++round) {
    std::string m = a;
    m[rng() % m.size()] = static_cast<char>(rng());
    m.resize(rng() % (m.size() + 1));
    size_t size = m.size();
    CapDnsTtls(m, 1);
    EXPECT_EQ(m.size(), size);
  }
}

TEST(DnsWire, TypeNames) {
  EXPECT_EQ(DnsTypeName(kDnsTypeTxt), "TXT");
  EXPECT_EQ(DnsTypeName(4242), "TYPE4242");
}

}  // namespace
}  // namespace ss
