#include "net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.hpp"
#include "fd.hpp"
#include "platform.hpp"
#include "strings.hpp"

namespace ss {

int FreeLoopbackPort() {
  Fd fd(platform::Socket(AF_INET, SOCK_STREAM));
  if (!fd.ok()) throw Error(kExitSoftware, Cat("socket: ", std::strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t len = sizeof addr;
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) != 0 ||
      ::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len) != 0) {
    throw Error(kExitUnavailable,
                Cat("cannot find a free port on 127.0.0.1: ", std::strerror(errno)));
  }
  return ntohs(addr.sin_port);
}

bool TcpPortOpen(const std::string& host, int port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return false;
  bool open = false;
  for (addrinfo* ai = res; ai && !open; ai = ai->ai_next) {
    Fd fd(platform::Socket(ai->ai_family, ai->ai_socktype, /*nonblock=*/true));
    if (!fd.ok()) continue;
    int rc = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
    if (rc == 0) {
      open = true;
    } else if (errno == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        open = err == 0;
      }
    }
  }
  ::freeaddrinfo(res);
  return open;
}

}  // namespace ss
