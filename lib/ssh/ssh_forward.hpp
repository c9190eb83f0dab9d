// Forwards of an SshConnection (internal to the SSH layer): the listeners of local forwards and
// the table of remote forwards that incoming forwarded-tcpip channels are matched against.
#pragma once

#include <asio/ip/tcp.hpp>
#include <asio/local/stream_protocol.hpp>
#include <asio/steady_timer.hpp>
#include <map>
#include <memory>
#include <string>

#include "ssh.hpp"
#include "ssh_mux.hpp"

namespace ss {

struct SshConnection::Forwards {
  struct Local {
    int id = 0;
    SocketAddress listen;
    SocketAddress target;
    std::unique_ptr<asio::ip::tcp::acceptor> tcp;
    std::unique_ptr<asio::local::stream_protocol::acceptor> unix_socket;
    std::unique_ptr<asio::steady_timer> backoff;  // after an accept error (EMFILE...)
  };
  struct Remote {
    int id = 0;
    std::string bind_host;
    int port = 0;
    TargetChooser choose;
  };

  explicit Forwards(ssh_detail::Mux& mux) : mux(mux) {}
  ~Forwards();
  Forwards(const Forwards&) = delete;
  Forwards& operator=(const Forwards&) = delete;

  void Accept(const std::shared_ptr<Local>& local);
  void StartLocal(const Local& local, std::shared_ptr<ssh_detail::Source> in,
                  std::shared_ptr<ssh_detail::Sink> out, const std::string& origin, int port);
  // libssh's channel-open request handler: forwarded-tcpip channels of our remote forwards.
  bool OnChannelOpen(ssh_message msg);
  void Close(Local& local);

  ssh_detail::Mux& mux;
  int next_id = 1;
  bool handler_installed = false;
  bool primed = false;                             // see SshConnection::PrimeForForwards
  std::map<int, std::shared_ptr<Local>> locals;    // by id
  std::map<int, std::shared_ptr<Remote>> remotes;  // by remote port
};

}  // namespace ss
