// Remote unix-socket forwards over libssh.
//
// Why a helper on the other side. OpenSSH does `ssh -R remote.sock:target` with the global
// request streamlocal-forward@openssh.com; libssh 0.10 neither sends it nor exposes a way to
// (ssh_global_request is internal to the library, and a patched static libssh would leave the
// distribution's package behind). The workable designs were:
//   A. a remote TCP forward to a loopback port plus a socat listener on the socket: simple, but
//      the loopback port is a listener every user of the remote machine can reach, and the
//      socket's 0600 mode would protect nothing;
//   B. an exec channel per connection (socat without fork): no port, but only one connection at
//      a time, a gap between connections, and a channel open per connection;
//   D. spawning OpenSSH's ssh: a second connection, a second client, and the host key and
//      identity handling done twice;
//   C. a small helper on the remote side that listens on the socket itself and tells ss of each
//      connection over an exec channel (this file and shell/socket-bridge.py).
// C is the one that leaves no listener other users could reach: the socket is created 0600 in
// the directory the caller names (0700 for the browser bridge), by the remote user, and nothing
// else listens but the helper's rendezvous socket, in a directory of its own with mode 0700.
// The helper is Python 3 (present wherever cloud-init runs, which every sandbox image needs),
// sent over the channel itself, so nothing is installed on the remote side and it always matches
// this build. Several SSH connections forwarding the same path share one listener; the helper's
// header says how.
//
// The data path. The helper once multiplexed every connection over its stdin and stdout, with
// frames, windows and acknowledgements: every byte went through its event loop and through ss's
// parser, which cost a third more time per round trip than OpenSSH and half its throughput. Now
// each connection has an SSH channel of its own, as OpenSSH's forwards do: when a client
// connects, the helper says so with a secret token; ss connects to the target and opens a
// direct-streamlocal channel to the helper's rendezvous socket, whose first bytes are the
// connection's id and token; the helper checks them and copies bytes between the client and the
// channel, a blocking thread per direction. Flow control is the channel's window, ends are the
// channel's EOF and close, and ss's side of it is the same code as a local forward's.
//
// Protocol, on the exec channel (ss → helper on stdin, helper → ss on stdout): first the helper's
// source, as 8 hex digits of length and the text; then frames of a 9-byte header, type (1 byte),
// connection id (4 bytes, big-endian), length (4 bytes), and `length` bytes of payload:
//   R  helper: listening; payload "leader RENDEZVOUS" or "follower RENDEZVOUS", the path of its
//      rendezvous socket
//   E  helper: failed (payload: why)
//   O  helper: a client connected as id (ids are never reused); payload its 16-byte token
//   C  ss: no target took id (or its channel failed): the helper closes the client
// Each connection's channel then starts with the id (4 bytes, big-endian) and the token.
#include "remote_socket.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <asio/generic/stream_protocol.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <atomic>
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
constexpr size_t kToken = 16;  // as TOKEN in the helper
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

// Bytes for the helper's stdin, in order.
class QueueSource : public ssh_detail::Source {
 public:
  void Push(std::string_view bytes) {
    buf_.append(bytes);
    if (!waiting_) return;
    Ready ready = std::move(waiting_);
    waiting_ = nullptr;
    ready();
  }
  long Read(char* out, size_t n) override {
    size_t take = std::min(n, buf_.size() - pos_);
    if (take == 0) return kWouldBlock;
    std::memcpy(out, buf_.data() + pos_, take);
    pos_ += take;
    if (pos_ == buf_.size()) {
      buf_.clear();
      pos_ = 0;
    }
    return static_cast<long>(take);
  }
  void WaitReadable(Ready ready) override {
    if (pos_ < buf_.size()) {
      ready();
      return;
    }
    waiting_ = std::move(ready);
  }

 private:
  std::string buf_;
  size_t pos_ = 0;
  Ready waiting_;
};

// A connection's channel input: its id and token, then what the target sends.
class PrefixSource : public ssh_detail::Source {
 public:
  PrefixSource(std::string prefix, std::shared_ptr<ssh_detail::Source> rest)
      : prefix_(std::move(prefix)), rest_(std::move(rest)) {}
  long Read(char* out, size_t n) override {
    if (pos_ == prefix_.size()) return rest_->Read(out, n);
    size_t take = std::min(n, prefix_.size() - pos_);
    std::memcpy(out, prefix_.data() + pos_, take);
    pos_ += take;
    return static_cast<long>(take);
  }
  void WaitReadable(Ready ready) override {
    if (pos_ < prefix_.size()) {
      ready();
      return;
    }
    rest_->WaitReadable(std::move(ready));
  }

 private:
  std::string prefix_;
  size_t pos_ = 0;
  std::shared_ptr<ssh_detail::Source> rest_;
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
  // A client connection the helper announced, while ss finds its target.
  struct Pending {
    uint32_t id = 0;
    std::string token;
    GenericSocket sock;
    std::vector<SocketAddress> candidates;
    size_t next = 0;
    explicit Pending(asio::io_context& io) : sock(io) {}
  };

  // The helper's stdout: parses its frames.
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
      : conn(conn), path(std::move(path)), targets(std::move(targets)) {}

  void OnBytes(const char* data, size_t n) {
    inbuf.append(data, n);
    size_t pos = 0;
    while (inbuf.size() - pos >= kHeader) {
      char type = inbuf[pos];
      uint32_t id = GetU32(inbuf.data() + pos + 1);
      uint32_t length = GetU32(inbuf.data() + pos + 5);
      if (inbuf.size() - pos - kHeader < length) break;
      std::string_view payload(inbuf.data() + pos + kHeader, length);
      pos += kHeader + length;
      Dispatch(type, id, payload);
    }
    inbuf.erase(0, pos);
  }

  void Dispatch(char type, uint32_t id, std::string_view payload) {
    if (type == 'R') {
      size_t space = payload.find(' ');
      std::string_view role = payload.substr(0, space);
      std::string_view where = space == std::string_view::npos ? "" : payload.substr(space + 1);
      if (where.empty() || where[0] != '/' || where.size() >= sizeof(sockaddr_un::sun_path) ||
          where.find('\0') != std::string_view::npos) {
        helper_error = "the forwarding helper named no usable rendezvous socket";
        return;
      }
      rendezvous = std::string(where);
      shared = role == "follower";
      ready = true;
    } else if (type == 'E') {
      helper_error = std::string(payload);
    } else if (type == 'O' && ready && payload.size() == kToken) {
      Open(id, std::string(payload));
    }
  }

  void Refuse(uint32_t id) {
    if (ended) return;
    std::string frame(1, 'C');
    PutU32(frame, id);
    PutU32(frame, 0);
    source->Push(frame);
  }

  void Open(uint32_t id, std::string token) {
    ++total;
    std::vector<SocketAddress> candidates;
    try {
      candidates = targets();
    } catch (const std::exception& e) {
      Debug(Cat("forward of ", path, ": ", e.what()));
    }
    if (candidates.empty()) {
      Refuse(id);
      return;
    }
    auto p = std::make_shared<Pending>(conn.io_context());
    p->id = id;
    p->token = std::move(token);
    p->candidates = std::move(candidates);
    Connect(p);
  }

  void Connect(const std::shared_ptr<Pending>& p) {
    while (p->next < p->candidates.size()) {
      const SocketAddress& target = p->candidates[p->next++];
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
      p->sock.close(ignored);
      std::weak_ptr<Impl> weak = weak_from_this();
      p->sock.async_connect(
          ep, [weak, p, tcp = target.socket_path.empty()](const asio::error_code& ec) {
            auto self = weak.lock();
            if (!self || self->ended || ec == asio::error::operation_aborted) return;
            if (ec) {
              Debug(Cat("forward of ", self->path, ": ", ec.message()));
              self->Connect(p);
              return;
            }
            if (tcp) {
              int one = 1;
              ::setsockopt(p->sock.native_handle(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            }
            self->Carry(*p);
          });
      return;
    }
    Refuse(p->id);  // no target accepted it
  }

  // The target took the connection: a channel of its own to the helper carries it.
  void Carry(Pending& p) {
    auto target = std::make_shared<ssh_detail::GenericIo>(std::move(p.sock));
    std::string head;
    PutU32(head, p.id);
    head += p.token;
    uint32_t id = p.id;
    std::weak_ptr<Impl> weak = weak_from_this();
    channels[id] =
        conn.OpenUnixIo(rendezvous, std::make_shared<PrefixSource>(std::move(head), target), target,
                        [weak, id](const std::string& error) {
                          if (auto self = weak.lock()) self->Carried(id, error);
                        });
  }

  void Carried(uint32_t id, const std::string& error) {
    channels.erase(id);
    if (error.empty()) return;
    if (warned) {
      Debug(Cat("forward of ", path, ": ", error));
    } else {
      // Said once: a server that refuses these channels refuses every one of them.
      warned = true;
      Warn(Cat("a connection to ", path, " could not be carried: ", error,
               " (the SSH server must allow unix-socket forwarding: AllowStreamLocalForwarding)"));
    }
    Refuse(id);
  }

  void End(const std::string& why) {
    if (ended) return;
    ended = true;
    end_reason = why;
    auto all = std::move(channels);
    channels.clear();
    for (auto& [id, channel] : all) channel.Close();
    if (ready && on_end) {
      auto call = std::move(on_end);
      on_end = nullptr;
      call(why);
    }
  }

  SshConnection& conn;
  std::string path;
  TargetList targets;
  std::shared_ptr<QueueSource> source;
  std::shared_ptr<CappedSink> err;
  SshChannel channel;
  std::string inbuf;
  std::string rendezvous;
  std::map<uint32_t, SshChannel> channels;  // the connections carried now, by id
  bool ready = false;
  bool shared = false;
  // Read from other threads too (ended(), total_connections()).
  std::atomic<bool> ended = false;
  bool warned = false;
  std::atomic<uint64_t> total = 0;
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
  impl->source = std::make_shared<QueueSource>();
  impl->err = std::make_shared<CappedSink>();
  std::weak_ptr<Impl> weak = impl;
  std::string_view script = RequireResource("shell/socket-bridge.py");
  char length[9];
  std::snprintf(length, sizeof length, "%08zx", script.size());
  impl->source->Push(length);
  impl->source->Push(script);

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
const std::string& RemoteSocketForward::rendezvous() const { return impl_->rendezvous; }
bool RemoteSocketForward::shared() const { return impl_->shared; }
size_t RemoteSocketForward::open_connections() const { return impl_->channels.size(); }
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
