#include "net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>
#include <vector>

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

Fd TcpConnect(const std::string& host, int port, std::chrono::milliseconds timeout) {
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return Fd();
  Fd connected;
  for (addrinfo* ai = res; ai && !connected.ok(); ai = ai->ai_next) {
    Fd fd(platform::Socket(ai->ai_family, ai->ai_socktype, /*nonblock=*/true));
    if (!fd.ok()) continue;
    int rc = ::connect(fd.get(), ai->ai_addr, ai->ai_addrlen);
    bool open = rc == 0;
    if (rc != 0 && errno == EINPROGRESS) {
      pollfd p{fd.get(), POLLOUT, 0};
      if (::poll(&p, 1, static_cast<int>(timeout.count())) == 1) {
        int err = 0;
        socklen_t len = sizeof err;
        ::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
        open = err == 0;
      }
    }
    if (open) connected = std::move(fd);
  }
  ::freeaddrinfo(res);
  return connected;
}

bool TcpPortOpen(const std::string& host, int port, std::chrono::milliseconds timeout) {
  return TcpConnect(host, port, timeout).ok();
}

GreetingWatch::GreetingWatch(std::string prefix, std::chrono::milliseconds every,
                             std::chrono::milliseconds patience, std::chrono::milliseconds settled)
    : prefix_(std::move(prefix)), every_(every), patience_(patience), settled_(settled) {}

GreetingWatch::~GreetingWatch() = default;

bool GreetingWatch::Heard(const std::string& host, int port, std::chrono::milliseconds wait) {
  using Clock = std::chrono::steady_clock;
  auto deadline = Clock::now() + wait;
  while (true) {
    auto now = Clock::now();
    auto kept = answered_ ? settled_ : patience_;
    // The ones closed or kept long enough go; a new one every `every_` (once answered, when the
    // one kept has gone).
    std::erase_if(attempts_,
                  [&](const Attempt& a) { return !a.fd.ok() || now - a.opened >= kept; });
    if (now - last_opened_ >= every_ && (!answered_ || attempts_.empty())) Open(host, port);
    auto next = deadline;
    for (const Attempt& a : attempts_) next = std::min(next, a.opened + kept);
    if (!answered_ || attempts_.empty()) next = std::min(next, last_opened_ + every_);
    std::vector<pollfd> polls;
    for (const Attempt& a : attempts_) {
      polls.push_back({a.fd.get(), static_cast<short>(a.connected ? POLLIN : POLLOUT), 0});
    }
    int ms = static_cast<int>(std::max<int64_t>(
        0, std::chrono::duration_cast<std::chrono::milliseconds>(next - now).count()));
    if (polls.empty()) {
      std::this_thread::sleep_for(std::chrono::milliseconds(std::min(ms, 100)));
    } else if (::poll(polls.data(), polls.size(), ms) > 0) {
      for (size_t k = 0; k < polls.size(); ++k) {
        if (polls[k].revents != 0 && Step(attempts_[k])) {
          // Heard: the others go at once (a server counts connections that have not logged in
          // yet, and sshd starts refusing past ten).
          attempts_.clear();
          return true;
        }
      }
    }
    if (Clock::now() >= deadline) return false;
  }
}

void GreetingWatch::Open(const std::string& host, int port) {
  Attempt a;
  a.opened = last_opened_ = std::chrono::steady_clock::now();
  ++opened_;
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  if (::getaddrinfo(host.c_str(), std::to_string(port).c_str(), &hints, &res) != 0) return;
  a.fd = Fd(platform::Socket(res->ai_family, res->ai_socktype, /*nonblock=*/true));
  if (a.fd.ok()) {
    int rc = ::connect(a.fd.get(), res->ai_addr, res->ai_addrlen);
    if (rc == 0) {
      a.connected = true;
    } else if (errno != EINPROGRESS) {
      a.fd.Close();
    }
  }
  ::freeaddrinfo(res);
  // A refused one counts too: the next comes `every_` later.
  attempts_.push_back(std::move(a));
}

bool GreetingWatch::Step(Attempt& a) {
  if (!a.connected) {
    int err = 0;
    socklen_t len = sizeof err;
    ::getsockopt(a.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
    if (err != 0) {
      a.fd.Close();
      return false;
    }
    a.connected = true;
    return false;
  }
  char buf[64];
  ssize_t n = ::read(a.fd.get(), buf, std::min(sizeof buf, prefix_.size() - a.heard.size()));
  if (n < 0 && (errno == EINTR || errno == EAGAIN)) return false;
  if (n <= 0) {
    // Closed from the far side: something there answers (a guest refusing, a full sshd).
    answered_ = true;
    a.fd.Close();
    return false;
  }
  answered_ = true;
  a.heard.append(buf, static_cast<size_t>(n));
  if (!prefix_.starts_with(a.heard)) {
    a.fd.Close();
    return false;
  }
  return a.heard.size() == prefix_.size();
}

}  // namespace ss
