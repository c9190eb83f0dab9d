// IP addresses as ss-net decides on them. There is one way to make one, from text (a rule, a
// CONNECT target, a Host header, a URL) or from bytes (a DNS answer), and it maps an IPv4-mapped
// IPv6 address (::ffff:a.b.c.d) to the IPv4 address it is: the kernel connects there, so the
// decision must see it too. The other forms that carry an IPv4 address inside an IPv6 one stay
// IPv6 (that is where the connection goes) and their IPv4 addresses are decided on besides
// (EmbeddedIpv4). Pure data, no I/O.
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

// An IPv4 or IPv6 address (IPv4 kept as its 4 bytes, family 4).
struct IpAddress {
  int family = 0;  // 4 or 6
  std::array<uint8_t, 16> bytes{};
  std::string ToString() const;
  bool operator==(const IpAddress&) const = default;
};

// An address in its strict textual forms only: dotted-quad IPv4 of four decimal numbers without
// leading zeros, IPv6 as RFC 4291 writes it (in brackets or not, no zone). Every other way of
// writing an IPv4 address that some parsers accept (2130706433, 0x7f.1, 0177.0.0.1, 127.1) is
// not an address here, and not a host name either (NormaliseHostName refuses a name whose last
// label is a number): it is refused, never looked up nor guessed at.
std::optional<IpAddress> ParseIpAddress(std::string_view text);

// An address from its 4 or 16 bytes in network order (a DNS answer's A or AAAA record, a socket
// address); nothing for any other length.
std::optional<IpAddress> IpAddressFromBytes(std::string_view raw);

// The IPv4 addresses an IPv6 address carries, by the forms that route to them: IPv4-compatible
// (::a.b.c.d, RFC 4291), IPv4-translated (::ffff:0:a.b.c.d, RFC 2765), NAT64's well-known prefix
// (64:ff9b::/96, RFC 6052) and its local-use prefix (64:ff9b:1::/48, RFC 8215: every place an
// RFC 6052 prefix of 48 to 96 bits puts it), 6to4 (2002::/16, RFC 3056) and Teredo (2001::/32,
// RFC 4380: its server and its client). Empty for IPv4 and for other IPv6 addresses.
std::vector<IpAddress> EmbeddedIpv4(const IpAddress& address);

// An address and a prefix length: a network.
struct IpNetwork {
  IpAddress address;  // with the bits past the prefix cleared
  int prefix = 0;     // 0-32 for IPv4, 0-128 for IPv6

  // The network of `address` (its bits past `prefix` cleared).
  static IpNetwork Of(const IpAddress& address, int prefix);
  // The whole address: /32 or /128.
  static IpNetwork Single(const IpAddress& address);
  bool Contains(const IpAddress& a) const;
  // Whether every address of `other` is in this network.
  bool Covers(const IpNetwork& other) const;
  std::string ToString() const;  // "10.0.0.0/8", "fd00::/8"
};

// "10.0.0.0/8", "[fd00::]/8", "fd00::/8"; nothing for anything else. For tables in the code.
std::optional<IpNetwork> ParseIpNetwork(std::string_view text);

}  // namespace ss
