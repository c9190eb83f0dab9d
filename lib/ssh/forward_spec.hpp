// Forwarding specifications in OpenSSH's grammar (ssh(1) -L and -R), parsed as ssh's
// parse_forward() does:
//
//   -L [bind_address:]port:host:hostport     -R [bind_address:]port:host:hostport
//   -L [bind_address:]port:remote_socket     -R [bind_address:]port:local_socket
//   -L local_socket:host:hostport            -R remote_socket:host:hostport
//   -L local_socket:remote_socket            -R remote_socket:local_socket
//
// Fields are separated by ':'; a field in square brackets is taken literally (IPv6 addresses:
// "[::1]:8080:[::1]:80"); a backslash escapes the next character; a field containing '/' is a
// socket path; ${NAME} is replaced by the environment variable NAME first. Ports are numbers
// (0-65535) or service names. Dynamic (SOCKS) forwards, ssh's "-R [bind:]port" alone, are not
// supported. Unlike ssh, -L also takes port 0: the listener gets a free port.
#pragma once

#include <string>
#include <string_view>

#include "ssh.hpp"

namespace ss {

enum class ForwardDirection { kLocal, kRemote };

struct ForwardSpec {
  ForwardDirection direction = ForwardDirection::kLocal;
  std::string text;  // as given
  // Where the forward listens: on this side for -L, on the other side for -R. An empty host with
  // a port means the default bind address (loopback); "*" means every address.
  SocketAddress listen;
  SocketAddress target;  // where each connection goes (resolved on the other side for -L)
  bool listen_host_given = false;
};

// Throws ss::Error(64) with ssh's wording: "bad local forwarding specification '8080'".
ForwardSpec ParseForwardSpec(std::string_view text, ForwardDirection direction);

// "-L 127.0.0.1:8080:localhost:80" style, for messages.
std::string DescribeForward(const ForwardSpec& spec);

}  // namespace ss
