// What the host is on the network, for ss-net's decisions (DecideAddress): its own addresses and
// the networks of its interfaces, read from the interfaces themselves (getifaddrs) and read again
// whenever the kernel says an address or a link changed, so that a decision never uses a list
// older than the last change (a sandbox's new bridge, a new lease on the LAN). Where the system
// sends no such notices, they are read again at every decision.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "fd.hpp"
#include "net_policy.hpp"

namespace ss {

// Whether interface `name` is a bridge where sandboxes or containers are: ss's own
// (SandboxBridgeName, "ssn-…"), LXD's, Incus's and LXC's (lxdbr…, ssbr…, incusbr…, lxcbr…),
// Docker's (docker…, br-…), Podman's (podman…, cni-…), libvirt's (virbr…), and macOS's vmnet
// bridges (bridge…), where Lume's and Lima's machines are. Their networks are never reached.
bool IsSandboxInterface(std::string_view name);

struct InterfaceAddress {
  std::string interface;
  bool loopback = false;
  IpAddress address;
  int prefix = 0;
  bool peer = false;  // the far end of a point-to-point link: not the host's, but on its network
};

// What the host is, from its interfaces' addresses: each address its own, loopback's networks
// its own, the networks of sandbox interfaces (IsSandboxInterface) its sandboxes', every other
// network (and the far end of a point-to-point link) local.
HostNetworks HostNetworksOf(const std::vector<InterfaceAddress>& addresses);

// The addresses of the host's interfaces now; throws ss::Error (69) when the system will not say.
std::vector<InterfaceAddress> ReadInterfaceAddresses();

// The host's networks, followed as they change.
class HostNetworksWatch {
 public:
  // Reads them; throws ss::Error (69) when it cannot.
  HostNetworksWatch();

  // As they are now: read again when the kernel said something changed since the last call (or
  // at every call, where it cannot say). A read that fails keeps the previous one, and is tried
  // again at the next call.
  const HostNetworks& Current();

 private:
  Fd watch_;
  HostNetworks networks_;
  bool stale_ = false;
};

}  // namespace ss
