#include "ip_address.hpp"

#include <arpa/inet.h>

#include <cstring>

#include "strings.hpp"

namespace ss {
namespace {

// An IPv4-mapped address (::ffff:0:0/96) is the IPv4 address it maps.
IpAddress Canonical(IpAddress a) {
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (a.family == 6 && std::memcmp(a.bytes.data(), kMapped, 12) == 0) {
    std::memmove(a.bytes.data(), a.bytes.data() + 12, 4);
    std::memset(a.bytes.data() + 4, 0, 12);
    a.family = 4;
  }
  return a;
}

IpAddress Ipv4(uint8_t a, uint8_t b, uint8_t c, uint8_t d) {
  IpAddress v4;
  v4.family = 4;
  v4.bytes[0] = a;
  v4.bytes[1] = b;
  v4.bytes[2] = c;
  v4.bytes[3] = d;
  return v4;
}

bool StartsWith(const IpAddress& a, std::initializer_list<uint8_t> prefix) {
  return std::memcmp(a.bytes.data(), prefix.begin(), prefix.size()) == 0;
}

}  // namespace

std::string IpAddress::ToString() const {
  char buf[INET6_ADDRSTRLEN] = {};
  inet_ntop(family == 4 ? AF_INET : AF_INET6, bytes.data(), buf, sizeof buf);
  return buf;
}

std::optional<IpAddress> ParseIpAddress(std::string_view text) {
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    text = text.substr(1, text.size() - 2);
  }
  std::string s(text);
  IpAddress a;
  if (inet_pton(AF_INET, s.c_str(), a.bytes.data()) == 1) {
    a.family = 4;
    return a;
  }
  if (inet_pton(AF_INET6, s.c_str(), a.bytes.data()) == 1) {
    a.family = 6;
    return Canonical(a);
  }
  return std::nullopt;
}

std::optional<IpAddress> IpAddressFromBytes(std::string_view raw) {
  if (raw.size() != 4 && raw.size() != 16) return std::nullopt;
  IpAddress a;
  a.family = raw.size() == 4 ? 4 : 6;
  std::memcpy(a.bytes.data(), raw.data(), raw.size());
  return Canonical(a);
}

std::vector<IpAddress> EmbeddedIpv4(const IpAddress& address) {
  if (address.family != 6) return {};
  const auto& b = address.bytes;
  auto at = [&](int i) { return Ipv4(b[i], b[i + 1], b[i + 2], b[i + 3]); };
  // ::a.b.c.d and ::ffff:0:a.b.c.d (:: and ::1 are themselves, not IPv4).
  static const uint8_t kZero[12] = {};
  static const uint8_t kTranslated[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff, 0, 0};
  static const uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  if (std::memcmp(b.data(), kZero, 12) == 0) {
    IpAddress v4 = at(12);
    if (v4.bytes[0] == 0 && v4.bytes[1] == 0 && v4.bytes[2] == 0 && v4.bytes[3] <= 1) return {};
    return {v4};
  }
  if (std::memcmp(b.data(), kTranslated, 12) == 0) return {at(12)};
  // (Never made so by ParseIpAddress or IpAddressFromBytes, which map it to IPv4.)
  if (std::memcmp(b.data(), kMapped, 12) == 0) return {at(12)};
  // 64:ff9b::/96.
  if (StartsWith(address, {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0})) return {at(12)};
  // 64:ff9b:1::/48: the translator's prefix may be 48, 56, 64 or 96 bits long (bits 64-71 are
  // always left out): every reading counts.
  if (StartsWith(address, {0, 0x64, 0xff, 0x9b, 0, 1})) {
    return {Ipv4(b[6], b[7], b[9], b[10]), Ipv4(b[7], b[9], b[10], b[11]), at(9), at(12)};
  }
  // 6to4: 2002:AABB:CCDD::/48.
  if (StartsWith(address, {0x20, 0x02})) return {at(2)};
  // Teredo: 2001:0000:server:flags:port:client, the client's address with its bits flipped.
  if (StartsWith(address, {0x20, 0x01, 0, 0})) {
    IpAddress client = at(12);
    for (int i = 0; i < 4; ++i) client.bytes[i] = static_cast<uint8_t>(~client.bytes[i]);
    return {at(4), client};
  }
  return {};
}

IpNetwork IpNetwork::Of(const IpAddress& address, int prefix) {
  IpNetwork n{address, prefix};
  int bits = address.family == 4 ? 32 : 128;
  for (int bit = prefix; bit < bits; ++bit) {
    n.address.bytes[bit / 8] &= static_cast<uint8_t>(~(0x80 >> (bit % 8)));
  }
  return n;
}

IpNetwork IpNetwork::Single(const IpAddress& address) {
  return {address, address.family == 4 ? 32 : 128};
}

bool IpNetwork::Contains(const IpAddress& a) const {
  if (a.family != address.family) return false;
  int full = prefix / 8;
  if (std::memcmp(a.bytes.data(), address.bytes.data(), full) != 0) return false;
  int rest = prefix % 8;
  if (rest == 0) return true;
  uint8_t mask = static_cast<uint8_t>(0xff << (8 - rest));
  return (a.bytes[full] & mask) == (address.bytes[full] & mask);
}

bool IpNetwork::Covers(const IpNetwork& other) const {
  return other.prefix >= prefix && Contains(other.address);
}

std::string IpNetwork::ToString() const { return Cat(address.ToString(), "/", prefix); }

std::optional<IpNetwork> ParseIpNetwork(std::string_view text) {
  size_t slash = text.rfind('/');
  if (slash == std::string_view::npos) return std::nullopt;
  auto address = ParseIpAddress(text.substr(0, slash));
  auto prefix = ParseDecimal(text.substr(slash + 1));
  if (!address || !prefix || *prefix < 0 || *prefix > (address->family == 4 ? 32 : 128)) {
    return std::nullopt;
  }
  return IpNetwork::Of(*address, static_cast<int>(*prefix));
}

}  // namespace ss
