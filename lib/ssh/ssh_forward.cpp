// Local (-L) and remote (-R) forwards on an SshConnection.
#include "ssh_forward.hpp"

#include <libssh/libssh.h>
#include <libssh/server.h>
#include <sys/stat.h>
#include <unistd.h>

#include <asio/connect.hpp>
#include <random>

#include "error.hpp"
#include "output.hpp"
#include "strings.hpp"

namespace ss {

using Forwards = SshConnection::Forwards;
using ssh_detail::ChannelEnd;
using ssh_detail::ChannelSpec;
using ssh_detail::TcpIo;
using ssh_detail::UnixIo;
using stream_protocol = asio::local::stream_protocol;

namespace {

// Names a host for a socket: IP literals, and "localhost" as the IPv4 loopback.
std::optional<asio::ip::address> AddressOf(const std::string& host) {
  if (host.empty() || host == "localhost") return asio::ip::address_v4::loopback();
  asio::error_code ec;
  auto address = asio::ip::make_address(host, ec);
  if (ec) return std::nullopt;
  return address;
}

stream_protocol::endpoint UnixEndpoint(const std::string& path) {
  if (path.size() >= sizeof(sockaddr_un::sun_path)) {
    throw Error(
        kExitDataErr, Cat("socket path too long: '", path, "'"),
        {Cat("  a unix socket path has at most ", sizeof(sockaddr_un::sun_path) - 1, " bytes")});
  }
  return stream_protocol::endpoint(path);
}

// A socket file nobody listens on any more (its server died) may be replaced.
bool IsStaleSocket(const std::string& path) {
  struct stat st;
  if (::lstat(path.c_str(), &st) != 0 || !S_ISSOCK(st.st_mode)) return false;
  asio::io_context io;
  stream_protocol::socket probe(io);
  asio::error_code ec;
  probe.connect(stream_protocol::endpoint(path), ec);
  return ec == asio::error::connection_refused;
}

void LogEnd(const std::string& what, const ChannelEnd& end) {
  if (!end.error.empty() && !end.lost) Debug(Cat(what, ": ", end.error));
}

}  // namespace

Forwards::~Forwards() {
  for (auto& [id, local] : locals) Close(*local);
}

void Forwards::Close(Local& local) {
  asio::error_code ignored;
  if (local.tcp) local.tcp->close(ignored);
  if (local.unix_socket) {
    local.unix_socket->close(ignored);
    ::unlink(local.listen.socket_path.c_str());
  }
  if (local.backoff) local.backoff->cancel();
}

void Forwards::Accept(const std::shared_ptr<Local>& local) {
  std::weak_ptr<Local> weak = local;
  auto retry_later = [this, weak] {
    auto l = weak.lock();
    if (!l) return;
    l->backoff->expires_after(std::chrono::milliseconds(100));
    l->backoff->async_wait([this, weak](const asio::error_code& ec) {
      if (auto l = weak.lock(); l && !ec) Accept(l);
    });
  };
  if (local->tcp) {
    local->tcp->async_accept(
        [this, weak, retry_later](const asio::error_code& ec, asio::ip::tcp::socket socket) {
          auto l = weak.lock();
          if (!l || ec == asio::error::operation_aborted) return;
          if (ec) {
            Debug(Cat("accept on ", l->listen.Describe(), ": ", ec.message()));
            retry_later();
            return;
          }
          asio::error_code ignored;
          auto peer = socket.remote_endpoint(ignored);
          socket.set_option(asio::ip::tcp::no_delay(true), ignored);
          auto io = std::make_shared<TcpIo>(std::move(socket));
          StartLocal(*l, io, io, peer.address().to_string(), peer.port());
          Accept(l);
        });
  } else {
    local->unix_socket->async_accept(
        [this, weak, retry_later](const asio::error_code& ec, stream_protocol::socket socket) {
          auto l = weak.lock();
          if (!l || ec == asio::error::operation_aborted) return;
          if (ec) {
            Debug(Cat("accept on ", l->listen.Describe(), ": ", ec.message()));
            retry_later();
            return;
          }
          auto io = std::make_shared<UnixIo>(std::move(socket));
          StartLocal(*l, io, io, "127.0.0.1", 0);
          Accept(l);
        });
  }
}

namespace {

// A channel to `target` in the sandbox (direct-tcpip, or direct-streamlocal for a unix socket)
// carrying `in` and `out`, closed once both directions have ended.
ChannelSpec ForwardSpec(std::string what, const SocketAddress& target, const std::string& origin,
                        int port, std::shared_ptr<ssh_detail::Source> in,
                        std::shared_ptr<ssh_detail::Sink> out) {
  ChannelSpec spec;
  spec.what = std::move(what);
  spec.open = [target, origin, port](ssh_channel ch) {
    if (!target.socket_path.empty()) {
      return ssh_channel_open_forward_unix(ch, target.socket_path.c_str(), origin.c_str(), port);
    }
    return ssh_channel_open_forward(ch, target.host.c_str(), target.port, origin.c_str(), port);
  };
  spec.in = std::move(in);
  spec.out = std::move(out);
  spec.close_on_eof = true;
  return spec;
}

}  // namespace

void Forwards::StartLocal(const Local& local, std::shared_ptr<ssh_detail::Source> in,
                          std::shared_ptr<ssh_detail::Sink> out, const std::string& origin,
                          int port) {
  ChannelSpec spec = ForwardSpec(Cat("forward to ", local.target.Describe()), local.target, origin,
                                 port, std::move(in), std::move(out));
  spec.on_end = [what = spec.what](const ChannelEnd& end) { LogEnd(what, end); };
  mux.Start(std::move(spec));
}

SshChannel SshConnection::OpenUnixIo(const std::string& remote_path,
                                     std::shared_ptr<ssh_detail::Source> in,
                                     std::shared_ptr<ssh_detail::Sink> out,
                                     std::function<void(const std::string&)> done) {
  SocketAddress target;
  target.socket_path = remote_path;
  ChannelSpec spec = ForwardSpec(Cat("connection to ", remote_path), target, "127.0.0.1", 0,
                                 std::move(in), std::move(out));
  spec.on_end = [done = std::move(done), lost = mux_->lost_message()](const ChannelEnd& end) {
    done(end.lost ? lost : end.error);
  };
  return SshChannel(mux_->Start(std::move(spec)));
}

bool Forwards::OnChannelOpen(ssh_message msg) {
  // Called from inside libssh: nothing may be thrown through it.
  try {
    if (ssh_message_subtype(msg) != SSH_CHANNEL_FORWARDED_TCPIP) return false;
    auto it = remotes.find(ssh_message_channel_request_open_destination_port(msg));
    if (it == remotes.end() || !it->second->choose) return false;
    std::optional<SocketAddress> target = it->second->choose();
    if (!target) return false;  // refused: the client in the sandbox sees the connection fail
    std::shared_ptr<ssh_detail::Source> in;
    std::shared_ptr<ssh_detail::Sink> out;
    if (!target->socket_path.empty()) {
      if (target->socket_path.size() >= sizeof(sockaddr_un::sun_path)) return false;
      auto io = std::make_shared<UnixIo>(mux.io(), stream_protocol::endpoint(target->socket_path));
      in = io;
      out = io;
    } else {
      auto address = AddressOf(target->host);
      if (!address) return false;
      auto io = std::make_shared<TcpIo>(
          mux.io(), asio::ip::tcp::endpoint(*address, static_cast<uint16_t>(target->port)));
      in = io;
      out = io;
    }
    ssh_channel channel = ssh_message_channel_request_open_reply_accept(msg);
    if (channel == nullptr) return true;
    // The host connection is still being made: what arrives meanwhile waits in the channel.
    // Should it fail, the channel is closed and the client in the sandbox sees an EOF.
    ChannelSpec spec;
    spec.what = Cat("forwarded connection to ", target->Describe());
    spec.in = std::move(in);
    spec.out = std::move(out);
    spec.close_on_eof = true;
    spec.on_end = [what = spec.what](const ChannelEnd& end) { LogEnd(what, end); };
    mux.Adopt(channel, std::move(spec));
    return true;
  } catch (const std::exception& e) {
    Debug(Cat("forwarded-tcpip: ", e.what()));
    return false;
  }
}

// sshd turns on TCP_NODELAY for its end of a connection only when the connection's first session
// command starts (ssh_packet_set_interactive). A connection that only forwards would meet Nagle's
// algorithm and delayed ACKs on every small exchange (about 40 ms, as `ssh -N -R` does), so the
// first forward runs a `true` in the background: one cheap command for the life of the connection.
void SshConnection::PrimeForForwards() {
  if (forwards_->primed) return;
  forwards_->primed = true;
  ExecAsync({"true"}, {}, [](ExecResult, std::string error) {
    if (!error.empty()) Debug(Cat("ssh: priming for forwards: ", error));
  });
}

ForwardInfo SshConnection::ForwardLocal(const SocketAddress& listen, const SocketAddress& target) {
  Forwards& f = *forwards_;
  PrimeForForwards();
  auto local = std::make_shared<Forwards::Local>();
  local->id = f.next_id++;
  local->listen = listen;
  local->target = target;
  local->backoff = std::make_unique<asio::steady_timer>(mux_->io());
  asio::error_code ec;
  if (listen.socket_path.empty()) {
    auto address = AddressOf(listen.host);
    if (!address) {
      throw Error(kExitDataErr, Cat("cannot listen on '", listen.host, "': not an IP address"));
    }
    asio::ip::tcp::endpoint at(*address, static_cast<uint16_t>(listen.port));
    local->tcp = std::make_unique<asio::ip::tcp::acceptor>(mux_->io());
    local->tcp->open(at.protocol(), ec);
    if (!ec) local->tcp->set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) local->tcp->bind(at, ec);
    if (!ec) local->tcp->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      throw Error(kExitUnavailable, Cat("cannot listen on ", listen.Describe()),
                  {Cat("  ", ec.message())});
    }
    local->listen.port = local->tcp->local_endpoint().port();
  } else {
    auto at = UnixEndpoint(listen.socket_path);
    local->unix_socket = std::make_unique<stream_protocol::acceptor>(mux_->io());
    local->unix_socket->open(at.protocol(), ec);
    if (!ec) local->unix_socket->bind(at, ec);
    if (ec == asio::error::address_in_use && IsStaleSocket(listen.socket_path)) {
      ::unlink(listen.socket_path.c_str());
      ec.clear();
      local->unix_socket->bind(at, ec);
    }
    if (!ec && ::chmod(listen.socket_path.c_str(), 0600) != 0) {
      ec = asio::error_code(errno, asio::error::get_system_category());
    }
    if (!ec) local->unix_socket->listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      throw Error(kExitUnavailable, Cat("cannot listen on ", listen.socket_path),
                  {Cat("  ", ec == asio::error::address_in_use ? "a live socket is already there"
                                                               : ec.message())});
    }
  }
  f.locals[local->id] = local;
  f.Accept(local);
  return ForwardInfo{local->id, local->listen};
}

ForwardInfo SshConnection::ForwardRemote(const std::string& bind_host, int port,
                                         TargetChooser choose) {
  Forwards& f = *forwards_;
  PrimeForForwards();
  if (!f.handler_installed) {
    mux_->SetChannelOpenHandler([&f](ssh_message msg) { return f.OnChannelOpen(msg); });
    f.handler_installed = true;
  }
  ssh_session s = mux_->session();
  // libssh cannot report the port the server chose for port 0 reliably, so a random explicit
  // port is asked for, and another one when it is taken. It is drawn from below Linux's
  // ephemeral range (32768 and up): a port there may be some program's bind(0) on one address
  // family only, and sshd, listening on both loopback addresses, would take the other one and
  // report success while connections to the first went elsewhere.
  std::mt19937 rng(std::random_device{}());
  std::uniform_int_distribution<int> pick(20000, 32767);
  const int attempts = port > 0 ? 1 : 20;
  for (int attempt = 0; attempt < attempts; ++attempt) {
    int p = port > 0 ? port : pick(rng);
    if (f.remotes.count(p)) continue;
    int rc = mux_->Blocking(
        [&] { return ssh_channel_listen_forward(s, bind_host.c_str(), p, nullptr); });
    if (rc == SSH_OK) {
      auto remote = std::make_shared<Forwards::Remote>();
      remote->id = f.next_id++;
      remote->bind_host = bind_host;
      remote->port = p;
      remote->choose = std::move(choose);
      f.remotes[p] = remote;
      SocketAddress bound;
      bound.host = bind_host;
      bound.port = p;
      return ForwardInfo{remote->id, bound};
    }
    if (mux_->lost()) throw Error(kExitRemote, mux_->lost_message()).AsPlain();
    if (ssh_get_error_code(s) != SSH_REQUEST_DENIED) {
      throw Error(kExitRemote, Cat("cannot ask ", Subject(), " to listen on ", bind_host, ":", p),
                  {Cat("  ", ssh_get_error(s))});
    }
  }
  throw Error(kExitUnavailable,
              port > 0
                  ? Cat(Subject(), " refused to listen on ", bind_host, ":", port)
                  : Cat(Subject(), " refused to listen on ", attempts, " ports of ", bind_host),
              {}, {"its sshd must allow TCP forwarding (AllowTcpForwarding)"});
}

void SshConnection::CancelForward(int id) {
  Forwards& f = *forwards_;
  if (auto it = f.locals.find(id); it != f.locals.end()) {
    f.Close(*it->second);
    f.locals.erase(it);
    return;
  }
  for (auto it = f.remotes.begin(); it != f.remotes.end(); ++it) {
    if (it->second->id != id) continue;
    auto remote = it->second;
    f.remotes.erase(it);
    mux_->Blocking([&] {
      return ssh_channel_cancel_forward(mux_->session(), remote->bind_host.c_str(), remote->port);
    });
    return;
  }
}

}  // namespace ss
