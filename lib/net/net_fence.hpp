// The fence around a sandbox's network, on the host: nftables rules of ss's own (table inet ss,
// three chains per sandbox) on the host side of the sandbox's link. Whatever root inside the
// sandbox does to its own routes, addresses or firewall, its packets cross this link, and here
//   - lookups to any resolver (port 53, UDP and TCP) go to ss-net's resolver,
//   - connections to any port 80 or 443 go to ss-net's transparent proxy,
//   - GATEWAY:3128 (what the sandbox's HTTP(S)_PROXY names) goes to ss-net's proxy,
//   - everything else (other TCP ports, UDP, ICMP, IPv6, the host's own services) is refused at
//     once: TCP with a reset, the rest with "administratively prohibited";
//   - a new connection over the sandbox's share of the host's connection tracking is dropped
//     (nftables `ct count`), so that lookups from many source ports never fill the host's table.
// The fence outlives ss-net: if ss-net is not running, the sandbox reaches nothing (fail closed).
// An accept in another table (LXD's, Docker's) does not undo a reject here.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ss {

inline constexpr int kSandboxProxyPort = 3128;

// The bridge of a sandbox's own network (Docker's, LXD's): "ssn-" and 10 hex digits of the
// name's digest, within the 15 characters of an interface name. ss-net fences only these when
// run through sudo.
std::string SandboxBridgeName(const std::string& sandbox);

// Where a sandbox's traffic reaches the host, as its backend says (Backend::Egress): what the
// fence closes and ss-net serves (egress.hpp).
struct EgressLink {
  // The host side of the sandbox's link, fenced with nftables. Empty: the backend fences the
  // link itself and the sandbox reaches nothing but what the backend relays to ss-net (QEMU's
  // restricted user network and its guestfwd relays, `ss-net relay`); ss-net then listens on
  // loopback only and no nftables fence is installed.
  std::string interface;
  // The host's IPv4 address there; with no interface, the address at which the sandbox sees
  // ss-net's proxy and resolver (QEMU: kQemuEgressAddress).
  std::string gateway;
  bool dhcp = false;  // the sandbox gets its address by DHCP from the host
};

struct NetFence {
  std::string sandbox;    // a valid sandbox name: names the chains
  std::string interface;  // the host side of the sandbox's link (a bridge of ss's own, a veth)
  std::string gateway;    // the host's IPv4 address there: where ss-net listens
  int proxy_port = 0;     // ss-net's ports on the gateway
  int transparent_port = 0;
  int dns_port = 0;
  bool dhcp = false;  // let DHCP requests reach the host (a bridge whose addresses come by DHCP)
  // The sandbox's share of the host's connection tracking table: a new connection while it
  // holds this many tracked ones is dropped, counted, and logged (at most once a second) to the
  // kernel's log. 0: no limit.
  int connections = 0;
};

// The share to give a sandbox that asked for `wanted` tracked connections: never more than a
// quarter of the host's table (nf_conntrack_max, when the host says), so that no one sandbox,
// nor a few, fill it.
int ConntrackShare(int wanted);

// The nft script that installs (or replaces) the sandbox's chains; throws ss::Error (65) when a
// field could not be written safely into it.
std::string NetFenceScript(const NetFence& fence);

// The chains, in `ruleset` (what `nft list table inet ss` prints), of sandboxes other than
// `sandbox` whose rules name `interface`: an interface is one sandbox's, so they are what a
// sandbox gone without its fence left (an engine names bridges again: cni-podman1), and would
// send the new sandbox's traffic to a dead ss-net. Every chain of such a sandbox is listed.
std::vector<std::string> StaleFenceChains(std::string_view ruleset, const std::string& interface,
                                          const std::string& sandbox);

// Installs the fence with `nft -f -` (ss::Error 69 with nft's words when it refuses), removing
// in the same step the stale chains of other sandboxes on its interface (StaleFenceChains).
void ApplyNetFence(const NetFence& fence);

// Removes the sandbox's chains (nothing when there are none).
void RemoveNetFence(const std::string& sandbox);

// Whether the sandbox's chains are installed.
bool NetFenceInstalled(const std::string& sandbox);

}  // namespace ss
