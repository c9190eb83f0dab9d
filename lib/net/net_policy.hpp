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
#include <vector>

namespace ss {

enum class NetMode { kAllowlist, kOpen, kNone };

std::string_view NetModeName(NetMode mode);  // "allowlist", "open", "none"
// "allowlist" / "open" / "none", or nothing.
std::optional<NetMode> ParseNetMode(std::string_view text);

// An IPv4 or IPv6 address (IPv4 kept as its 4 bytes, family 4).
struct IpAddress {
  int family = 0;  // 4 or 6
  std::array<uint8_t, 16> bytes{};
  std::string ToString() const;
};
std::optional<IpAddress> ParseIpAddress(std::string_view text);

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
// (labels of 1-63 letters, digits, '-' or '_', 253 characters at most).
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
  bool allowed = false;
  std::string rule;  // the rule that decided, or "mode allowlist" / "mode open" / "mode none"
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

// Whether a connection may go to `address` (where an allowed name resolved to, or an address the
// sandbox named) on `port`. Deny rules for the address count; an address on the host itself or
// its networks (loopback, private, link-local, CGNAT, unique-local, multicast) is reached only
// when an allow rule names that address or network: an allowed name never leads into the LAN.
NetVerdict DecideAddress(const NetPolicy& policy, const IpAddress& address, int port);

// Whether `address` is loopback, private, link-local, CGNAT, unique-local, multicast or
// unspecified.
bool IsInternalAddress(const IpAddress& address);

}  // namespace ss
