// A listening TCP socket on 127.0.0.1 at a port the kernel picks, for tests that play a server.
#pragma once

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include "fd.hpp"
#include "platform.hpp"

namespace ss::testing {

struct Listener {
  Fd fd;
  int port = 0;
  // `backlog` 0: a queue that fills at once (further SYNs are dropped while nobody accepts).
  explicit Listener(int backlog = 64) : fd(platform::Socket(AF_INET, SOCK_STREAM)) {
    sockaddr_in addr = Address();
    socklen_t len = sizeof addr;
    EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr), 0);
    EXPECT_EQ(::listen(fd.get(), backlog), 0);
    EXPECT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&addr), &len), 0);
    port = ntohs(addr.sin_port);
  }
  // 127.0.0.1:port (port 0 until bound).
  sockaddr_in Address() const {
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    addr.sin_port = htons(static_cast<uint16_t>(port));
    return addr;
  }
};

}  // namespace ss::testing
