// Test peers for forwards: an echo server (TCP or unix socket) on its own thread, and a client
// that pushes messages through many connections at once and checks that they come back intact.
#pragma once

#include <dirent.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/write.hpp>
#include <cstring>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "platform.hpp"
#include "strings.hpp"

namespace ss::testing {

class EchoServer {
 public:
  // TCP on 127.0.0.1 (a free port) when `unix_path` is empty.
  explicit EchoServer(std::string unix_path = {}) : path_(std::move(unix_path)) {
    if (path_.empty()) {
      tcp_ = std::make_unique<asio::ip::tcp::acceptor>(
          io_, asio::ip::tcp::endpoint(asio::ip::address_v4::loopback(), 0));
      port_ = tcp_->local_endpoint().port();
    } else {
      ::unlink(path_.c_str());
      unix_ = std::make_unique<asio::local::stream_protocol::acceptor>(
          io_, asio::local::stream_protocol::endpoint(path_));
    }
    Accept();
    thread_ = std::thread([this] { io_.run(); });
  }
  ~EchoServer() {
    io_.stop();
    thread_.join();
    if (!path_.empty()) ::unlink(path_.c_str());
  }
  int port() const { return port_; }
  const std::string& path() const { return path_; }
  size_t accepted() const { return accepted_; }

 private:
  template <class Socket>
  struct Session : std::enable_shared_from_this<Session<Socket>> {
    explicit Session(Socket s) : socket(std::move(s)) {}
    void Read() {
      auto self = this->shared_from_this();
      socket.async_read_some(asio::buffer(buf), [self](const asio::error_code& ec, size_t n) {
        if (ec) {
          asio::error_code ignored;
          self->socket.shutdown(Socket::shutdown_send, ignored);
          return;
        }
        asio::async_write(self->socket, asio::buffer(self->buf, n),
                          [self](const asio::error_code& ec, size_t) {
                            if (!ec) self->Read();
                          });
      });
    }
    Socket socket;
    char buf[65536];
  };

  void Accept() {
    if (tcp_) {
      tcp_->async_accept([this](const asio::error_code& ec, asio::ip::tcp::socket s) {
        if (ec) return;
        ++accepted_;
        std::make_shared<Session<asio::ip::tcp::socket>>(std::move(s))->Read();
        Accept();
      });
    } else {
      unix_->async_accept(
          [this](const asio::error_code& ec, asio::local::stream_protocol::socket s) {
            if (ec) return;
            ++accepted_;
            std::make_shared<Session<asio::local::stream_protocol::socket>>(std::move(s))->Read();
            Accept();
          });
    }
  }

  std::string path_;
  int port_ = 0;
  asio::io_context io_;
  std::unique_ptr<asio::ip::tcp::acceptor> tcp_;
  std::unique_ptr<asio::local::stream_protocol::acceptor> unix_;
  std::atomic<size_t> accepted_{0};
  std::thread thread_;
};

inline int ConnectTcp(int port) {
  int fd = platform::Socket(AF_INET, SOCK_STREAM);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<uint16_t>(port));
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  return fd;
}

inline int ConnectUnix(const std::string& path) {
  int fd = platform::Socket(AF_UNIX, SOCK_STREAM);
  sockaddr_un a{};
  a.sun_family = AF_UNIX;
  std::strncpy(a.sun_path, path.c_str(), sizeof a.sun_path - 1);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) {
    ::close(fd);
    return -1;
  }
  return fd;
}

inline size_t OpenFdCount() {
  size_t n = 0;
  DIR* d = ::opendir("/proc/self/fd");
  while (dirent* e = d ? ::readdir(d) : nullptr) {
    if (e->d_name[0] != '.') ++n;
  }
  if (d) ::closedir(d);
  return n - 1;  // the directory being read
}

// Opens `connections` connections with `connect`, sends a different random message of `bytes`
// on each, half-closes, and reads until EOF, all at once in one poll loop. Returns an empty string
// when every message came back byte for byte, else what went wrong.
inline std::string EchoRoundTrips(const std::function<int()>& connect, int connections,
                                  size_t bytes, unsigned seed = 1) {
  struct Conn {
    int fd = -1;
    std::string sent;
    std::string got;
    size_t written = 0;
    bool eof = false;
  };
  std::vector<Conn> conns(static_cast<size_t>(connections));
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int> byte(0, 255);
  for (auto& c : conns) {
    c.fd = connect();
    if (c.fd < 0) return "cannot connect";
    ::fcntl(c.fd, F_SETFL, ::fcntl(c.fd, F_GETFL) | O_NONBLOCK);
    c.sent.resize(bytes);
    for (auto& ch : c.sent) ch = static_cast<char>(byte(rng));
    if (bytes == 0) ::shutdown(c.fd, SHUT_WR);
  }
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  size_t open = conns.size();
  std::vector<char> buf(1 << 16);
  while (open > 0) {
    if (std::chrono::steady_clock::now() > deadline) return "timed out";
    std::vector<pollfd> fds;
    for (auto& c : conns) {
      if (c.eof) continue;
      short events = POLLIN;
      if (c.written < c.sent.size()) events |= POLLOUT;
      fds.push_back({c.fd, events, 0});
    }
    if (::poll(fds.data(), fds.size(), 1000) < 0) return "poll failed";
    size_t i = 0;
    for (auto& c : conns) {
      if (c.eof) continue;
      pollfd& p = fds[i++];
      if ((p.revents & POLLOUT) && c.written < c.sent.size()) {
        ssize_t n =
            ::send(c.fd, c.sent.data() + c.written,
                   std::min<size_t>(1 << 16, c.sent.size() - c.written), platform::kSendFlags);
        if (n > 0) c.written += static_cast<size_t>(n);
        if (n < 0 && errno != EAGAIN) return Cat("send: ", std::strerror(errno));
        if (c.written == c.sent.size()) ::shutdown(c.fd, SHUT_WR);
      }
      if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
        ssize_t n = ::recv(c.fd, buf.data(), buf.size(), 0);
        if (n > 0) c.got.append(buf.data(), static_cast<size_t>(n));
        if (n < 0 && errno != EAGAIN) return Cat("recv: ", std::strerror(errno));
        if (n == 0) {
          c.eof = true;
          --open;
          ::close(c.fd);
          if (c.got != c.sent) {
            return Cat("connection got ", c.got.size(), " bytes back of ", c.sent.size(),
                       c.got.size() == c.sent.size() ? " (different)" : "");
          }
        }
      }
    }
  }
  return "";
}

}  // namespace ss::testing
