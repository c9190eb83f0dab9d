// Forwards as ssh(1) sets them up: a list of -L / -R specifications on one SshConnection, all or
// nothing, with ssh's wording when one cannot be set up. Used by ss-tunnel; anything holding a
// connection can use it.
//
// Destinations: a sandbox by name (its pinned host key and the install's key), or user@host, an
// SSH server ss did not provision. For user@host the host key must already be in the user's
// known_hosts (~/.ssh/known_hosts, then /etc/ssh/ssh_known_hosts: the keys the user has
// verified, hashed or not) or in the file given instead; ss never accepts an unknown key and
// never writes known_hosts. A key only @cert-authority vouches for counts as unknown (libssh
// does not check host certificates).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "forward_spec.hpp"
#include "json_out.hpp"
#include "ssh.hpp"

namespace ss {

struct Destination {
  SshEndpoint endpoint;
  SshOptions options;
  std::string sandbox;  // the sandbox's name; empty for user@host
};

struct DestinationFlags {
  std::string identity;     // -i
  int port = 0;             // -p (0: 22)
  std::string known_hosts;  // --known-hosts
};

// "NAME" (a sandbox, which must be running) or "user@host". Throws ss::Error: 64 for flags that
// do not apply, 65 for a malformed DEST, 66 for a sandbox or key that does not exist, 69 for a
// sandbox that is not running.
Destination ResolveDestination(const std::string& dest, const DestinationFlags& flags);

struct ForwardStatus {
  ForwardSpec spec;
  SocketAddress listen;  // where it listens, with the port chosen for 0
  SocketAddress target;
  bool shared = false;  // a remote socket another connection's helper already serves
  Json ToJson() const;  // a TunnelForward line
};

class RemoteSocketForward;

class Tunnel {
 public:
  // Sets up every forward in order; throws ss::Error on the first that fails: 255 with ssh's
  // words ("remote port forwarding failed for listen port 8080", "could not request local
  // forwarding"), 64 for a target host that does not resolve.
  static std::unique_ptr<Tunnel> Open(SshConnection& conn, const std::vector<ForwardSpec>& specs);
  ~Tunnel();
  Tunnel(const Tunnel&) = delete;
  Tunnel& operator=(const Tunnel&) = delete;

  const std::vector<ForwardStatus>& forwards() const { return forwards_; }
  // Lines for forwards whose port was chosen (0), as ssh prints them: "Allocated port 41235 for
  // remote forward to localhost:80".
  std::vector<std::string> AllocatedMessages() const;
  // Called once when a remote socket forward ends while the connection lives on (its helper was
  // killed): the tunnel no longer does what was asked.
  void OnBroken(std::function<void(const std::string& why)> on_broken);

 private:
  Tunnel() = default;
  std::vector<ForwardStatus> forwards_;
  std::vector<std::unique_ptr<RemoteSocketForward>> sockets_;
  std::function<void(const std::string&)> on_broken_;
  std::string broken_;
};

// A target host for a forward made on this side: IP literals as they are, "localhost" as
// 127.0.0.1, other names resolved now (IPv4 first). Throws ss::Error(64) when it does not.
std::string ResolveTargetHost(const std::string& host);

}  // namespace ss
