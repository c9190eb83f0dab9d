// A sandbox's egress policy: which destinations its traffic may reach through ss-net's proxy and
// resolver. Pure data and matching, no I/O.
//
// A rule is one of:
//   example.com            that name only (any port)
//   *.example.com          every name below example.com, not example.com itself
//   example.com:443        a name (or wildcard) on one port
//   10.0.0.0/8, 10.1.2.3   an IPv4 network or address; [2001:db8::]/32, [::1] for IPv6
//   10.1.2.3:22            an address on one port
// Names compare without case and without a trailing dot. Deny rules win over allow rules.
#pragma once

#include <array>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ip_address.hpp"

namespace ss {

enum class NetMode { kAllowlist, kOpen, kNone };

std::string_view NetModeName(NetMode mode);  // "allowlist", "open", "none"
// "allowlist" / "open" / "none", or nothing.
std::optional<NetMode> ParseNetMode(std::string_view text);

struct NetRule {
  enum Kind { kName, kWildcard, kNetwork } kind = kName;
  std::string text;   // as written, normalised ("*.example.com:443")
  std::string name;   // kName, kWildcard (the suffix, "example.com"): lower case, no trailing dot
  IpAddress network;  // kNetwork
  int prefix = 0;     // kNetwork
  int port = 0;       // 0: any port
};

// Parses one rule; throws ss::Error (exit 65) saying what is wrong with it and how rules look.
NetRule ParseNetRule(std::string_view text);

// A lower-case name without its trailing dot, or nothing when `host` is not a valid DNS name
// (labels of 1-63 letters, digits, '-' or '_', 253 characters at most) or ends in a number: a
// last label of digits only, or 0x and hex digits, is how IPv4 addresses are written in forms
// other than ParseIpAddress's (2130706433, 0x7f.1, 127.1), which URL parsers read as addresses.
std::optional<std::string> NormaliseHostName(std::string_view host);

// Where the real value of an injected secret is read, on the host, each time it is needed (a
// command's output is kept for a minute): never from the policy file itself.
struct NetSecretSource {
  enum Kind { kEnv, kFile, kCommand } kind = kEnv;
  std::string env;                   // kEnv: the variable of ss-net's environment
  std::string file;                  // kFile: an absolute path
  std::vector<std::string> command;  // kCommand: argv, run without a shell
};

// As written in config.yaml and policy.json: {"env": NAME}, {"file": ABSOLUTE-PATH} or
// {"command": [PROGRAM, ARGS...]}. nullopt when `from` is none of these.
std::optional<NetSecretSource> SecretSourceFromJson(const nlohmann::json& from);
// An HTTP header name (an RFC 9110 token, at most 100 characters).
bool IsHeaderName(std::string_view s);
nlohmann::json SecretSourceToJson(const NetSecretSource& from);

// A secret the sandbox holds only as a placeholder: for connections to `hosts` (exact names)
// ss-net terminates TLS and puts the real value in place of the placeholder in request headers;
// the placeholder sent anywhere else is refused.
// The headers a credential goes in unless config names others: Authorization and x-api-key.
std::vector<std::string> DefaultInjectHeaders();

struct NetInjection {
  std::string secret;       // its name, for messages and the log ("ANTHROPIC_API_KEY")
  std::string placeholder;  // what the sandbox holds instead of the value
  std::vector<std::string> hosts;
  NetSecretSource from;
  // The request headers (lower case) its placeholder is replaced in; anywhere else it is refused:
  // a server that reflects a header it was sent must not hand the real value back.
  std::vector<std::string> headers = DefaultInjectHeaders();
};

struct NetPolicy {
  NetMode mode = NetMode::kAllowlist;
  std::vector<NetRule> allow;
  std::vector<NetRule> deny;
  std::vector<NetInjection> inject;
};

// The injections for connections to `host` (a normalised name), in policy order.
std::vector<const NetInjection*> InjectionsFor(const NetPolicy& policy, std::string_view host);

struct NetVerdict {
  NetVerdict() = default;
  NetVerdict(bool allowed, std::string rule, std::string address = "", std::string network = "")
      : allowed(allowed),
        rule(std::move(rule)),
        address(std::move(address)),
        network(std::move(network)) {}

  bool allowed = false;
  // The rule that decided, or "mode allowlist" / "mode open" / "mode none", or for an address:
  // "host address", "sandbox network", "internal address", "public address".
  std::string rule;
  // For an address refused as the host's, a sandbox's or internal: the address that decided it
  // (an IPv4 address carried inside the IPv6 one connected to, or that one itself); for a
  // sandbox network, also the network and the interface it is on ("10.0.3.0/24 on ssn-1a2b").
  std::string address;
  std::string network;
};

// The policy as ss-net reads it from its policy file: {"mode": "allowlist", "allow": [rules],
// "deny": [rules], "inject": [{"secret": NAME, "placeholder": TEXT, "hosts": [names],
// "from": {"env": NAME} | {"file": PATH} | {"command": [argv]}}]} ("inject" only when there are
// injections). NetPolicyFromJson throws ss::Error (65) naming what is wrong.
std::string NetPolicyToJson(const NetPolicy& policy);
NetPolicy NetPolicyFromJson(std::string_view text);

// Whether `host` (a name or an address literal) on `port` may be reached. `port` 0 asks about
// the name alone (a DNS lookup): port-bound rules for the name count then.
NetVerdict Decide(const NetPolicy& policy, std::string_view host, int port);

// One network of the host's interfaces, and the interface it is on.
struct HostNetwork {
  IpNetwork network;
  std::string interface;
};

// What the host itself is, on the network, as its interfaces say at the moment of a decision
// (host_networks.hpp reads and follows them).
struct HostNetworks {
  // The host's own addresses: every address of every interface (a /32 or /128), and every
  // network of the loopback interface (all of 127.0.0.0/8 is the host's).
  std::vector<HostNetwork> own;
  // The networks of the bridges where sandboxes and containers are: ss's own (ssn-…) and the
  // container engines' (IsSandboxInterface).
  std::vector<HostNetwork> sandboxes;
  // The networks of every other interface: the host's LAN, its VPNs.
  std::vector<HostNetwork> local;
};

// Whether a connection may go to `address` (where an allowed name resolved to, or an address the
// sandbox named) on `port`, the host being `host`. In every mode, rules or not:
//   - the host's own addresses (`host.own`, loopback, 0.0.0.0/8, ::) are refused: the host's
//     services, ss-net's own ports and other sandboxes' SSH ports among them;
//   - the networks of sandboxes and containers (`host.sandboxes`) are refused;
//   - internal addresses (IsInternalAddress, and `host.local`: the host's LAN) are refused unless
//     an allow rule names the address or a network inside the internal network it is in (a
//     LAN printer: ss net allow 192.168.1.20; 0.0.0.0/0 does not open the LAN);
//   - deny rules for the address count.
// An IPv6 address that carries IPv4 addresses (EmbeddedIpv4) is refused when any of them is.
NetVerdict DecideAddress(const NetPolicy& policy, const IpAddress& address, int port,
                         const HostNetworks& host);

// Why an allow rule can never let anything through: its whole network is the host's own (its
// addresses, loopback) or a network of sandboxes, refused in every mode ("the host's own
// address", "a sandbox network (10.1.2.0/24 on ssn-x)"). Empty for names, wildcards and networks
// with anything else in them.
std::string NeverAllowed(const NetRule& rule, const HostNetworks& host);

// Whether `address` is loopback, private, link-local, CGNAT, unique-local, NAT64 local-use,
// multicast or unspecified.
bool IsInternalAddress(const IpAddress& address);

}  // namespace ss
