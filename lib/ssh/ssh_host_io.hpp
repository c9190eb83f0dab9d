// The host side of SSH channels (internal to the SSH layer): where a channel's input comes from
// and where its output goes. All of it is non-blocking and readiness-based, so that an idle
// connection holds no buffer: bytes are read into the loop's one scratch buffer only when the
// channel can take them (window, backpressure), and written straight through when the host side
// can take them.
#pragma once

#include <asio/generic/stream_protocol.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "ssh_command.hpp"

namespace ss::ssh_detail {

// Results of Read/Write besides a byte count.
constexpr long kWouldBlock = -1;
constexpr long kFailed = -2;

using Ready = std::function<void()>;

// Bytes going into a channel.
class Source {
 public:
  virtual ~Source() = default;
  // > 0 bytes read, 0 at the end of the input, kWouldBlock or kFailed.
  virtual long Read(char* buf, size_t n) = 0;
  // Calls `ready` once when Read may make progress (also on errors and cancellation).
  virtual void WaitReadable(Ready ready) = 0;
};

// Bytes coming out of a channel (its stdout or stderr).
class Sink {
 public:
  virtual ~Sink() = default;
  // >= 0 bytes taken, kWouldBlock or kFailed (the reader is gone: EPIPE, ECONNRESET).
  virtual long Write(const char* data, size_t n) = 0;
  virtual void WaitWritable(Ready ready) = 0;
  // No more output: half-close a socket. Nothing for a shared descriptor such as stdout.
  virtual void Finish() {}
};

// A connected (or connecting) TCP or unix stream socket, both source and sink of one channel.
template <class Protocol>
class SocketIo : public Source, public Sink {
 public:
  using Socket = typename Protocol::socket;
  explicit SocketIo(Socket socket);
  // Connects asynchronously; until then reads and writes would block, and a failed connect makes
  // them fail.
  SocketIo(asio::io_context& io, typename Protocol::endpoint target);
  ~SocketIo() override;
  SocketIo(const SocketIo&) = delete;
  SocketIo& operator=(const SocketIo&) = delete;
  long Read(char* buf, size_t n) override;
  void WaitReadable(Ready ready) override;
  long Write(const char* data, size_t n) override;
  void WaitWritable(Ready ready) override;
  void Finish() override;

 private:
  void Connected(const asio::error_code& ec);
  Socket socket_;
  bool connecting_ = false;
  bool failed_ = false;
  std::vector<Ready> after_connect_;
  std::weak_ptr<SocketIo*> alive_;  // lets a connect handler that outlives us know
};

using TcpIo = SocketIo<asio::ip::tcp>;
using UnixIo = SocketIo<asio::local::stream_protocol>;
using GenericIo = SocketIo<asio::generic::stream_protocol>;  // either, connected elsewhere

// One of our own descriptors (stdin, stdout, a terminal, a pipe, a file). Works on a duplicate,
// made non-blocking (which the caller must undo on the original: see FdFlagsGuard). Files and
// other descriptors epoll cannot watch are always ready.
class FdIo : public Source, public Sink {
 public:
  FdIo(asio::io_context& io, int fd);
  long Read(char* buf, size_t n) override;
  void WaitReadable(Ready ready) override;
  long Write(const char* data, size_t n) override;
  void WaitWritable(Ready ready) override;

 private:
  void Wait(asio::posix::stream_descriptor::wait_type type, Ready ready);
  asio::io_context& io_;
  asio::posix::stream_descriptor fd_;
  std::shared_ptr<bool> pollable_ = std::make_shared<bool>(true);
};

// Fixed bytes, then the end of input.
class StringSource : public Source {
 public:
  explicit StringSource(std::string data) : data_(std::move(data)) {}
  long Read(char* buf, size_t n) override;
  void WaitReadable(Ready ready) override { ready(); }

 private:
  std::string data_;
  size_t pos_ = 0;
};

// Collects output in memory.
class StringSink : public Sink {
 public:
  long Write(const char* data, size_t n) override {
    text.append(data, n);
    return static_cast<long>(n);
  }
  void WaitWritable(Ready ready) override { ready(); }
  std::string text;
};

// A source that would block until Open() is called.
class GatedSource : public Source {
 public:
  explicit GatedSource(std::shared_ptr<Source> inner) : inner_(std::move(inner)) {}
  long Read(char* buf, size_t n) override;
  void WaitReadable(Ready ready) override;
  void Open();

 private:
  std::shared_ptr<Source> inner_;
  bool open_ = false;
  Ready waiting_;
};

// Several sources one after the other; the end of input comes after the last one's.
class ChainSource : public Source {
 public:
  explicit ChainSource(std::vector<std::shared_ptr<Source>> parts) : parts_(std::move(parts)) {}
  long Read(char* buf, size_t n) override;
  void WaitReadable(Ready ready) override;

 private:
  std::vector<std::shared_ptr<Source>> parts_;
  size_t current_ = 0;
};

// PTY output with the secret hand-shake hidden (see MarkerFilter). Calls on_ready when the
// ready marker has been seen and on_done when the done marker has.
class MarkerSink : public Sink {
 public:
  MarkerSink(std::shared_ptr<Sink> inner, MarkerFilter filter, Ready on_ready, Ready on_done);
  long Write(const char* data, size_t n) override;
  void WaitWritable(Ready ready) override { inner_->WaitWritable(std::move(ready)); }
  void Finish() override;

 private:
  bool FlushPending();
  std::shared_ptr<Sink> inner_;
  MarkerFilter filter_;
  Ready on_ready_;
  Ready on_done_;
  std::string pending_;
  bool failed_ = false;
};

}  // namespace ss::ssh_detail
