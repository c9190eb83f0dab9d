#include "host_networks.hpp"

#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>

#include <cerrno>
#include <cstring>

#include "error.hpp"
#include "platform.hpp"
#include "strings.hpp"

namespace ss {

bool IsSandboxInterface(std::string_view name) {
  for (std::string_view prefix : {"ssn-", "lxdbr", "ssbr", "incusbr", "lxcbr", "docker", "br-",
                                  "podman", "cni-", "virbr", "bridge"}) {
    if (name.starts_with(prefix)) return true;
  }
  return false;
}

HostNetworks HostNetworksOf(const std::vector<InterfaceAddress>& addresses) {
  HostNetworks out;
  for (const InterfaceAddress& a : addresses) {
    if (a.peer) {
      out.local.push_back({IpNetwork::Single(a.address), a.interface});
      continue;
    }
    out.own.push_back({IpNetwork::Single(a.address), a.interface});
    IpNetwork network = IpNetwork::Of(a.address, a.prefix);
    if (network.prefix == IpNetwork::Single(a.address).prefix) continue;
    if (a.loopback) {
      out.own.push_back({network, a.interface});
    } else if (IsSandboxInterface(a.interface)) {
      out.sandboxes.push_back({network, a.interface});
    } else if (network.prefix > 0) {
      out.local.push_back({network, a.interface});
    }
  }
  return out;
}

namespace {

std::optional<IpAddress> FromSockaddr(const sockaddr* at) {
  if (!at) return std::nullopt;
  if (at->sa_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(at);
    return IpAddressFromBytes(
        std::string_view(reinterpret_cast<const char*>(&in->sin_addr.s_addr), 4));
  }
  if (at->sa_family == AF_INET6) {
    const auto* in6 = reinterpret_cast<const sockaddr_in6*>(at);
    return IpAddressFromBytes(
        std::string_view(reinterpret_cast<const char*>(in6->sin6_addr.s6_addr), 16));
  }
  return std::nullopt;
}

int PrefixOf(const sockaddr* mask) {
  if (!mask) return -1;
  const uint8_t* bytes = nullptr;
  size_t size = 0;
  if (mask->sa_family == AF_INET) {
    bytes = reinterpret_cast<const uint8_t*>(
        &reinterpret_cast<const sockaddr_in*>(mask)->sin_addr.s_addr);
    size = 4;
  } else if (mask->sa_family == AF_INET6) {
    bytes = reinterpret_cast<const sockaddr_in6*>(mask)->sin6_addr.s6_addr;
    size = 16;
  } else {
    return -1;
  }
  int prefix = 0;
  for (size_t i = 0; i < size; ++i) {
    for (int bit = 7; bit >= 0 && (bytes[i] >> bit) & 1; --bit) ++prefix;
    if (bytes[i] != 0xff) break;
  }
  return prefix;
}

}  // namespace

std::vector<InterfaceAddress> ReadInterfaceAddresses() {
  ifaddrs* list = nullptr;
  if (::getifaddrs(&list) != 0) {
    throw Error(kExitUnavailable,
                Cat("cannot read the host's network addresses: ", std::strerror(errno)));
  }
  std::vector<InterfaceAddress> out;
  for (ifaddrs* i = list; i; i = i->ifa_next) {
    std::optional<IpAddress> ip = FromSockaddr(i->ifa_addr);
    if (!ip) continue;
    InterfaceAddress a;
    a.interface = i->ifa_name ? i->ifa_name : "";
    a.loopback = (i->ifa_flags & IFF_LOOPBACK) != 0;
    a.address = *ip;
    int full = ip->family == 4 ? 32 : 128;
    int prefix = PrefixOf(i->ifa_netmask);
    a.prefix = prefix < 0 || prefix > full ? full : prefix;
    out.push_back(a);
    // The far end of a point-to-point link (a tunnel's) is on the host's network too.
    if (i->ifa_flags & IFF_POINTOPOINT) {
      std::optional<IpAddress> peer = FromSockaddr(i->ifa_dstaddr);
      if (peer && peer->family == ip->family && !(*peer == *ip)) {
        a.address = *peer;
        a.prefix = full;
        a.peer = true;
        out.push_back(a);
      }
    }
  }
  ::freeifaddrs(list);
  return out;
}

HostNetworksWatch::HostNetworksWatch() : watch_(platform::OpenAddressWatch()) {
  networks_ = HostNetworksOf(ReadInterfaceAddresses());
}

const HostNetworks& HostNetworksWatch::Current() {
  int changed = watch_.ok() ? platform::DrainAddressWatch(watch_.get()) : -1;
  if (changed != 0 || stale_) {
    try {
      networks_ = HostNetworksOf(ReadInterfaceAddresses());
      stale_ = false;
    } catch (const Error&) {
      stale_ = true;
    }
  }
  return networks_;
}

}  // namespace ss
