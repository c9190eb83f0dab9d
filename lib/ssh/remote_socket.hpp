// Remote unix-socket forwards: ssh -R remote_socket:target on an SshConnection. A client on the
// other side of the connection connects to a unix socket there, and each connection reaches a
// target on this side (a unix socket or a TCP address), chosen anew for every connection.
//
// libssh cannot ask sshd for such a listener (it has no streamlocal-forward@openssh.com), so a
// small helper runs on the other side, in an exec channel of the connection: it listens on the
// socket, and each connection made there is carried by an SSH channel of its own that ss opens to
// the helper. The reasons for this design, and the protocol, are in remote_socket.cpp.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ssh.hpp"

namespace ss {

struct RemoteSocketOptions {
  // Create the socket's directory with mode 0700 when it is missing, and insist that it is owned
  // by the remote user with mode 0700 (the browser bridge's directory). Without it the directory
  // must exist, as with sshd.
  bool make_dir = false;
  std::string python = "python3";  // the helper's interpreter on the remote side
};

// The targets for one connection, tried in order until one accepts it; empty refuses the
// connection (the remote client sees it closed). Called on the connection's loop thread.
using TargetList = std::function<std::vector<SocketAddress>()>;

class RemoteSocketForward {
 public:
  // Starts the helper on `conn` and runs the connection's loop until it listens on `path` (or
  // has joined the listener another connection's helper holds there). Throws ss::Error(255)
  // "remote port forwarding failed for listen path PATH" with the reason.
  static std::unique_ptr<RemoteSocketForward> Start(SshConnection& conn, const std::string& path,
                                                    const RemoteSocketOptions& options,
                                                    TargetList targets);
  ~RemoteSocketForward();  // ends the helper's channel and every connection
  RemoteSocketForward(const RemoteSocketForward&) = delete;
  RemoteSocketForward& operator=(const RemoteSocketForward&) = delete;

  const std::string& path() const;
  // The helper's rendezvous socket on the remote side, which each connection's channel reaches.
  const std::string& rendezvous() const;
  // Whether another connection's helper holds the listener (this one joined it).
  bool shared() const;
  size_t open_connections() const;
  uint64_t total_connections() const;
  bool ended() const;
  // Called once, on the loop thread, when the forward ends after it was set up (the helper was
  // killed, the connection was lost): `why` says how.
  void OnEnd(std::function<void(const std::string& why)> on_end);

  struct Impl;

 private:
  explicit RemoteSocketForward(std::shared_ptr<Impl> impl);
  std::shared_ptr<Impl> impl_;
};

}  // namespace ss
