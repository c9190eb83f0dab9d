// ss-net's server for one sandbox: the only ways out of it. Runs on the host, on the sandbox's
// side of the fence that the backend's firewall (or user-mode networking) puts around it.
//
//   proxy        HTTP CONNECT and absolute-form HTTP, for clients that honour HTTP(S)_PROXY;
//                GET /denials (origin form) answers the recent denials, for the agent to read
//   transparent  connections redirected from the sandbox's ports 80 and 443 (their original
//                destination read back from conntrack): the name from the TLS ClientHello's SNI
//                or the HTTP Host header, TLS never terminated
//   injection    for a host a secret is injected for (NetInjection), the proxy and the transparent
//                proxy terminate TLS with a leaf of the install's CA (net_ca.hpp), check each
//                HTTP/1.1 request, put the secret's real value in place of its placeholder, and
//                send it on over TLS verified against the host's trusted roots: never a tunnel
//   dns          a resolver (UDP and TCP) that answers only names the policy allows, by asking
//                the upstream resolver; everything else is NXDOMAIN or REFUSED, and logged
//
// Every connection and lookup is decided by the policy file (re-read when it changes, so an
// edit counts for the next connection) and logged as one JSON line. Names are resolved through
// the same upstream resolver the sandbox's lookups go to; every address is decided on by
// DecideAddress, as the kernel would connect to it, against the host's interfaces as they are at
// that moment (HostNetworksWatch): never the host itself nor a sandbox's network, in any mode.
#pragma once

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/ip/udp.hpp>
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ss {

inline constexpr uint64_t kNetLogMaxBytes = 16 << 20;

struct NetServerOptions {
  std::string sandbox;      // named in the log and in every denial
  std::string policy_file;  // JSON, see NetPolicyFromJson
  std::string log_file;     // JSON lines, appended; "" for none
  // When the log passes this size it is renamed to log_file + ".1" (replacing the one before)
  // and a new one is started: at most about twice this is kept, whatever the sandbox does.
  uint64_t log_max_bytes = kNetLogMaxBytes;
  std::string ca_dir;  // where the install's CA is (net_ca.hpp); "" for StateDir()
  std::vector<asio::ip::tcp::endpoint> proxy;
  std::vector<asio::ip::tcp::endpoint> transparent;
  std::vector<asio::ip::udp::endpoint> dns;  // each also served over TCP
  asio::ip::udp::endpoint upstream_dns;
  std::chrono::milliseconds connect_timeout{10000};
  std::chrono::milliseconds head_timeout{10000};
  std::chrono::milliseconds dns_timeout{3000};
  // The sandbox's share of this process's descriptors: client connections and lookups served at
  // once (each holds up to three descriptors: the client's, the destination's, a lookup's). One
  // more is refused at once, with its reason in the log. 0: what the descriptors allow.
  int max_connections = 0;
};

// The connections and lookups a server may serve at once: `wanted` (or, for 0, as many as its
// descriptors allow), never more than its open-file limit leaves room for.
int NetConnectionShare(int wanted);

// Raises this process's soft limit of open files to its hard limit (a server's descriptors are
// its sandbox's connections); the limit it has then.
int RaiseOpenFileLimit();

class NetServer {
 public:
  // Loads the policy (ss::Error 65 when it is invalid) and binds every listener (ss::Error 69
  // naming the one that cannot be bound); serves while `io` runs.
  NetServer(asio::io_context& io, NetServerOptions options);
  ~NetServer();

  NetServer(const NetServer&) = delete;
  NetServer& operator=(const NetServer&) = delete;

  // The addresses actually bound (a port 0 in the options becomes the port chosen).
  std::vector<asio::ip::tcp::endpoint> ProxyEndpoints() const;
  std::vector<asio::ip::tcp::endpoint> TransparentEndpoints() const;
  std::vector<asio::ip::udp::endpoint> DnsEndpoints() const;

  struct State;

 private:
  std::shared_ptr<State> state_;
};

}  // namespace ss
