// Remote unix-socket forwards over libssh.
//
// Why a helper multiplexing over one exec channel. OpenSSH does `ssh -R remote.sock:target` with
// the global request streamlocal-forward@openssh.com; libssh 0.10 neither sends it nor exposes a
// way to (ssh_global_request is internal to the library, and a patched static libssh would leave
// the distribution's package behind). The workable designs were:
//   A. a remote TCP forward to a loopback port plus a socat listener on the socket: simple, but
//      the loopback port is a listener every user of the remote machine can reach, and the
//      socket's 0600 mode would protect nothing;
//   B. an exec channel per connection (socat without fork): no port, but only one connection at
//      a time, a gap between connections, and a channel open per connection;
//   D. spawning OpenSSH's ssh: a second connection, a second client, and the host key and
//      identity handling done twice;
//   C. a small helper on the remote side that listens on the socket itself and carries every
//      connection over its stdin and stdout (this file and shell/socket-bridge.py).
// C is the one that leaves no listener other users could reach: the socket is created 0600 in
// the directory the caller names (0700 for the browser bridge), by the remote user, and nothing
// else listens. It handles any number of concurrent connections on one channel, with flow
// control per connection, so one slow reader never stalls the others. The helper is Python 3
// (present wherever cloud-init runs, which every sandbox image needs), sent over the channel
// itself, so nothing is installed on the remote side and it always matches this build. Several
// SSH connections forwarding the same path share one listener; the helper's header says how.
//
// Protocol, on the channel (ss → helper on stdin, helper → ss on stdout): first the helper's
// source, as 8 hex digits of length and the text; then frames of a 9-byte header, type (1 byte),
// connection id (4 bytes, big-endian), length (4 bytes), and `length` bytes of payload:
//   R  helper: listening (payload "leader" or "follower")      E  helper: failed (payload: why)
//   O  helper: a client connected as id (ids are never reused)
//   D  either: bytes for id                                      F  either: end of input for id
//   C  either: id failed, drop it (no reply)
//   A  either: `length` bytes of id were delivered (no payload), sent once a quarter of the
//      window has been delivered (not per frame: small exchanges carry no acknowledgements);
//      each side may have at most kWindow unacknowledged bytes in flight per connection.
// A side forgets an id once both directions have ended (or on C); frames for unknown ids are
// ignored.
#include "remote_socket.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <asio/generic/stream_protocol.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/post.hpp>
#include <cstdio>
#include <cstring>
#include <map>

#include "error.hpp"
#include "output.hpp"
#include "resources.hpp"
#include "ssh_host_io.hpp"
#include "strings.hpp"

namespace ss {

using ssh_detail::kFailed;
using ssh_detail::kWouldBlock;
using ssh_detail::Ready;

namespace {

constexpr size_t kHeader = 9;
constexpr uint32_t kWindow = 256 * 1024;     // as WINDOW in the helper
constexpr uint32_t kAckEvery = kWindow / 4;  // as ACK_EVERY in the helper
constexpr size_t kChunk = 64 * 1024;
constexpr size_t kOutHigh = 1 << 20;  // stop reading targets while this much waits for the channel
constexpr size_t kErrCap = 4096;

void PutU32(std::string& out, uint32_t v) {
  out += static_cast<char>(v >> 24);
  out += static_cast<char>(v >> 16);
  out += static_cast<char>(v >> 8);
  out += static_cast<char>(v);
}

uint32_t GetU32(const char* p) {
  auto b = reinterpret_cast<const unsigned char*>(p);
  return (uint32_t{b[0]} << 24) | (uint32_t{b[1]} << 16) | (uint32_t{b[2]} << 8) | uint32_t{b[3]};
}

// Frames for the helper, in order; the channel reads them as far as its window allows.
class FrameSource : public ssh_detail::Source {
 public:
  void Push(char type, uint32_t id, std::string_view payload, uint32_t length) {
    buf_ += type;
    PutU32(buf_, id);
    PutU32(buf_, length);
    buf_.append(payload);
    if (pending() >= kOutHigh) high_ = true;
    Notify();
  }
  void PushRaw(std::string_view bytes) {
    buf_.append(bytes);
    Notify();
  }
  size_t pending() const { return buf_.size() - pos_; }
  bool high() const { return high_; }
  long Read(char* out, size_t n) override {
    size_t take = std::min(n, pending());
    if (take == 0) return kWouldBlock;
    std::memcpy(out, buf_.data() + pos_, take);
    pos_ += take;
    if (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    } else if (pos_ > (1 << 20)) {
      buf_.erase(0, pos_);
      pos_ = 0;
    }
    if (high_ && pending() < kOutHigh / 2) {
      high_ = false;
      if (on_drain) on_drain();
    }
    return static_cast<long>(take);
  }
  void WaitReadable(Ready ready) override {
    if (pending() > 0) {
      ready();
      return;
    }
    waiting_ = std::move(ready);
  }
  std::function<void()> on_drain;

 private:
  void Notify() {
    if (!waiting_) return;
    Ready ready = std::move(waiting_);
    waiting_ = nullptr;
    ready();
  }
  std::string buf_;
  size_t pos_ = 0;
  bool high_ = false;
  Ready waiting_;
};

class CappedSink : public ssh_detail::Sink {
 public:
  long Write(const char* data, size_t n) override {
    if (text.size() < kErrCap) text.append(data, std::min(n, kErrCap - text.size()));
    return static_cast<long>(n);
  }
  void WaitWritable(Ready ready) override { ready(); }
  std::string text;
};

using GenericSocket = asio::generic::stream_protocol::socket;

}  // namespace

struct RemoteSocketForward::Impl : std::enable_shared_from_this<Impl> {
  struct Conn {
    uint32_t id = 0;
    GenericSocket sock;
    std::vector<SocketAddress> candidates;
    size_t next = 0;
    bool connected = false;
    std::string to_target;  // from the helper, not yet written
    bool write_waiting = false;
    bool helper_eof = false;
    bool shut = false;  // our write side is shut down (after helper_eof)
    bool target_eof = false;
    bool read_waiting = false;
    bool paused = false;
    uint32_t inflight = 0;  // sent to the helper, not acknowledged
    uint32_t unacked = 0;   // delivered to the target, not yet acknowledged to the helper
    explicit Conn(asio::io_context& io) : sock(io) {}
  };

  // The helper's end of the channel: parses its frames.
  class FrameSink : public ssh_detail::Sink {
   public:
    explicit FrameSink(std::weak_ptr<Impl> impl) : impl_(std::move(impl)) {}
    long Write(const char* data, size_t n) override {
      if (auto impl = impl_.lock()) impl->OnBytes(data, n);
      return static_cast<long>(n);
    }
    void WaitWritable(Ready ready) override { ready(); }

   private:
    std::weak_ptr<Impl> impl_;
  };

  Impl(SshConnection& conn, std::string path, TargetList targets)
      : io(conn.io_context()), path(std::move(path)), targets(std::move(targets)) {}

  void OnBytes(const char* data, size_t n) {
    inbuf.append(data, n);
    size_t pos = 0;
    while (inbuf.size() - pos >= kHeader) {
      char type = inbuf[pos];
      uint32_t id = GetU32(inbuf.data() + pos + 1);
      uint32_t length = GetU32(inbuf.data() + pos + 5);
      size_t size = type == 'A' ? 0 : length;
      if (inbuf.size() - pos - kHeader < size) break;
      std::string_view payload(inbuf.data() + pos + kHeader, size);
      pos += kHeader + size;
      Dispatch(type, id, payload, length);
    }
    inbuf.erase(0, pos);
  }

  void Dispatch(char type, uint32_t id, std::string_view payload, uint32_t length) {
    if (type == 'R') {
      ready = true;
      shared = payload == "follower";
      return;
    }
    if (type == 'E') {
      helper_error = std::string(payload);
      return;
    }
    if (type == 'O') {
      Open(id);
      return;
    }
    auto it = conns.find(id);
    if (it == conns.end()) return;
    std::shared_ptr<Conn> c = it->second;
    switch (type) {
      case 'D':
        c->to_target.append(payload);
        Write(c);
        break;
      case 'F':
        c->helper_eof = true;
        Write(c);
        break;
      case 'C':
        Drop(c, false);
        break;
      case 'A':
        c->inflight -= std::min(c->inflight, length);
        ArmRead(c);
        break;
      default:
        break;
    }
  }

  void Send(char type, uint32_t id, std::string_view payload = {}, uint32_t length = 0) {
    if (ended) return;
    source->Push(type, id, payload, type == 'A' ? length : static_cast<uint32_t>(payload.size()));
  }

  void Open(uint32_t id) {
    ++total;
    std::vector<SocketAddress> candidates;
    try {
      candidates = targets();
    } catch (const std::exception& e) {
      Debug(Cat("forward of ", path, ": ", e.what()));
    }
    if (candidates.empty()) {
      Send('C', id);
      return;
    }
    auto c = std::make_shared<Conn>(io);
    c->id = id;
    c->candidates = std::move(candidates);
    conns[id] = c;
    Connect(c);
  }

  void Connect(const std::shared_ptr<Conn>& c) {
    while (c->next < c->candidates.size()) {
      const SocketAddress& target = c->candidates[c->next++];
      asio::generic::stream_protocol::endpoint ep;
      if (!target.socket_path.empty()) {
        if (target.socket_path.size() >= sizeof(sockaddr_un::sun_path)) continue;
        ep = asio::local::stream_protocol::endpoint(target.socket_path);
      } else {
        asio::error_code ec;
        auto address = asio::ip::make_address(
            target.host.empty() || target.host == "localhost" ? "127.0.0.1" : target.host, ec);
        if (ec) continue;
        ep = asio::ip::tcp::endpoint(address, static_cast<uint16_t>(target.port));
      }
      asio::error_code ignored;
      c->sock.close(ignored);
      std::weak_ptr<Impl> weak = weak_from_this();
      c->sock.async_connect(
          ep, [weak, c, tcp = target.socket_path.empty()](const asio::error_code& ec) {
            auto self = weak.lock();
            if (!self || ec == asio::error::operation_aborted || !self->conns.count(c->id)) return;
            if (ec) {
              Debug(Cat("forward of ", self->path, ": ", ec.message()));
              self->Connect(c);
              return;
            }
            c->connected = true;
            asio::error_code ignored;
            c->sock.non_blocking(true, ignored);
            if (tcp) {
              int one = 1;
              ::setsockopt(c->sock.native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            }
            self->Write(c);
            self->ArmRead(c);
          });
      return;
    }
    Drop(c, true);  // no target accepted it
  }

  void Write(const std::shared_ptr<Conn>& c) {
    if (!c->connected || c->write_waiting) return;
    size_t done = 0;
    while (done < c->to_target.size()) {
      asio::error_code ec;
      size_t n = c->sock.write_some(
          asio::buffer(c->to_target.data() + done, c->to_target.size() - done), ec);
      if (ec == asio::error::would_block || ec == asio::error::try_again) break;
      if (ec) {
        Drop(c, true);
        return;
      }
      done += n;
    }
    if (done > 0) {
      c->to_target.erase(0, done);
      c->unacked += static_cast<uint32_t>(done);
      if (c->unacked >= kAckEvery) {
        Send('A', c->id, {}, c->unacked);
        c->unacked = 0;
      }
    }
    if (!c->to_target.empty()) {
      c->write_waiting = true;
      std::weak_ptr<Impl> weak = weak_from_this();
      c->sock.async_wait(GenericSocket::wait_write, [weak, c](const asio::error_code& ec) {
        auto self = weak.lock();
        if (!self || ec == asio::error::operation_aborted || !self->conns.count(c->id)) return;
        c->write_waiting = false;
        self->Write(c);
      });
      return;
    }
    if (c->helper_eof && !c->shut) {
      c->shut = true;
      asio::error_code ignored;
      c->sock.shutdown(GenericSocket::shutdown_send, ignored);
      MaybeDone(c);
    }
  }

  void ArmRead(const std::shared_ptr<Conn>& c) {
    if (!c->connected || c->target_eof || c->read_waiting || c->inflight >= kWindow) return;
    if (source->high()) {
      if (!c->paused) {
        c->paused = true;
        paused.push_back(c);
      }
      return;
    }
    c->read_waiting = true;
    std::weak_ptr<Impl> weak = weak_from_this();
    c->sock.async_wait(GenericSocket::wait_read, [weak, c](const asio::error_code& ec) {
      auto self = weak.lock();
      if (!self || ec == asio::error::operation_aborted || !self->conns.count(c->id)) return;
      c->read_waiting = false;
      self->Read(c);
    });
  }

  void Read(const std::shared_ptr<Conn>& c) {
    size_t want = std::min<size_t>(kChunk, kWindow - c->inflight);
    if (scratch.size() < kChunk) scratch.resize(kChunk);
    asio::error_code ec;
    size_t n = c->sock.read_some(asio::buffer(scratch.data(), want), ec);
    if (ec == asio::error::would_block || ec == asio::error::try_again) {
      ArmRead(c);
      return;
    }
    if (ec == asio::error::eof) {
      c->target_eof = true;
      Send('F', c->id);
      MaybeDone(c);
      return;
    }
    if (ec) {
      Drop(c, true);
      return;
    }
    c->inflight += static_cast<uint32_t>(n);
    Send('D', c->id, std::string_view(scratch.data(), n));
    ArmRead(c);
  }

  void Resume() {
    auto list = std::move(paused);
    paused.clear();
    for (auto& weak : list) {
      if (auto c = weak.lock()) {
        c->paused = false;
        if (conns.count(c->id)) ArmRead(c);
      }
    }
  }

  void MaybeDone(const std::shared_ptr<Conn>& c) {
    if (c->target_eof && c->shut) Drop(c, false);
  }

  void Drop(const std::shared_ptr<Conn>& c, bool tell) {
    if (conns.erase(c->id) == 0) return;
    asio::error_code ignored;
    c->sock.close(ignored);
    c->to_target.clear();
    c->to_target.shrink_to_fit();
    if (tell) Send('C', c->id);
  }

  void End(const std::string& why) {
    if (ended) return;
    ended = true;
    end_reason = why;
    auto all = conns;
    for (auto& [id, c] : all) Drop(c, false);
    if (ready && on_end) {
      auto call = std::move(on_end);
      on_end = nullptr;
      call(why);
    }
  }

  asio::io_context& io;
  std::string path;
  TargetList targets;
  std::shared_ptr<FrameSource> source;
  std::shared_ptr<CappedSink> err;
  SshChannel channel;
  std::string inbuf;
  std::vector<char> scratch;
  std::map<uint32_t, std::shared_ptr<Conn>> conns;
  std::vector<std::weak_ptr<Conn>> paused;
  bool ready = false;
  bool shared = false;
  bool ended = false;
  uint64_t total = 0;
  std::string helper_error;
  std::string end_reason;
  std::function<void(const std::string&)> on_end;
};

RemoteSocketForward::RemoteSocketForward(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}

RemoteSocketForward::~RemoteSocketForward() {
  impl_->on_end = nullptr;
  impl_->End("closed");
  impl_->channel.Close();
}

std::unique_ptr<RemoteSocketForward> RemoteSocketForward::Start(SshConnection& conn,
                                                                const std::string& path,
                                                                const RemoteSocketOptions& options,
                                                                TargetList targets) {
  auto impl = std::make_shared<Impl>(conn, path, std::move(targets));
  impl->source = std::make_shared<FrameSource>();
  impl->err = std::make_shared<CappedSink>();
  std::weak_ptr<Impl> weak = impl;
  impl->source->on_drain = [weak] {
    if (auto self = weak.lock())
      asio::post(self->io, [weak] {
        if (auto self = weak.lock()) self->Resume();
      });
  };
  std::string_view script = RequireResource("shell/socket-bridge.py");
  char length[9];
  std::snprintf(length, sizeof length, "%08zx", script.size());
  impl->source->PushRaw(length);
  impl->source->PushRaw(script);

  // The bootstrap reads the helper's text from stdin and runs it.
  std::vector<std::string> argv = {
      options.python, "-I", "-S", "-c", std::string(RequireResource("shell/socket-bridge-boot.py")),
      "serve"};
  if (options.make_dir) argv.push_back("--mkdir");
  argv.push_back(path);
  struct Exit {
    bool done = false;
    int status = 0;
    std::string error;
  };
  auto exit = std::make_shared<Exit>();
  impl->channel = conn.ExecIo(argv, impl->source, std::make_shared<Impl::FrameSink>(impl),
                              impl->err, [weak, exit](int status, std::string error) {
                                exit->done = true;
                                exit->status = status;
                                exit->error = error;
                                auto self = weak.lock();
                                if (!self) return;
                                std::string why =
                                    !error.empty() ? error
                                    : !self->helper_error.empty()
                                        ? self->helper_error
                                        : Cat("the forwarding helper exited with status ", status);
                                self->End(why);
                              });
  conn.RunUntil([&] { return impl->ready || exit->done; });
  if (!impl->ready) {
    Error e(kExitRemote, Cat("remote port forwarding failed for listen path ", path));
    if (!impl->helper_error.empty()) {
      e.Detail(Cat("  ", impl->helper_error));
    } else if (!exit->error.empty()) {
      e.Detail(Cat("  ", exit->error));
    } else {
      for (const auto& line : SplitLines(impl->err->text)) {
        if (!Trim(line).empty()) e.Detail(Cat("  ", line));
      }
      if (exit->status == 127) {
        e.Hint(
            Cat("forwarding a remote unix socket needs ", options.python, " on the remote side"));
      }
    }
    impl->channel.Close();
    throw e;
  }
  return std::unique_ptr<RemoteSocketForward>(new RemoteSocketForward(impl));
}

const std::string& RemoteSocketForward::path() const { return impl_->path; }
bool RemoteSocketForward::shared() const { return impl_->shared; }
size_t RemoteSocketForward::open_connections() const { return impl_->conns.size(); }
uint64_t RemoteSocketForward::total_connections() const { return impl_->total; }
bool RemoteSocketForward::ended() const { return impl_->ended; }

void RemoteSocketForward::OnEnd(std::function<void(const std::string&)> on_end) {
  if (impl_->ended) {
    on_end(impl_->end_reason);
    return;
  }
  impl_->on_end = std::move(on_end);
}

}  // namespace ss
