// Private IPv4 subnets for the networks ss creates (LXD's bridge; any Docker or Podman network):
// one that nothing on this host uses yet.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ss {

struct Ipv4Net {
  uint32_t address = 0;  // host byte order, the network's first address
  int prefix = 0;
  bool Overlaps(const Ipv4Net& other) const;
  std::string ToString() const;     // "10.1.2.0/24"
  std::string GatewayCidr() const;  // its first host address: "10.1.2.1/24"
};

// "10.1.2.3/24", "10.1.2.3" (a /32), "default" (nothing: a default route takes no subnet).
std::optional<Ipv4Net> ParseIpv4Net(const std::string& text);

// A /24 of 10.0.0.0/8 (then 172.16.0.0/12, then 192.168.0.0/16) overlapping none of `taken`;
// `seed` spreads the choice, as LXD's own does, so that two hosts rarely pick the same one.
std::optional<Ipv4Net> FreeSubnet(const std::vector<Ipv4Net>& taken, uint32_t seed);

// What this host's networking uses: its routes (every table) and interface addresses, LXD's
// networks, Docker's and Podman's networks (those whose engine answers).
std::vector<Ipv4Net> SubnetsInUse();

}  // namespace ss
