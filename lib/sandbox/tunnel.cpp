#include "tunnel.hpp"

#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>

#include "config.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "paths.hpp"
#include "remote_socket.hpp"
#include "sandbox.hpp"
#include "strings.hpp"

namespace ss {
namespace {

Json AddressJson(const SocketAddress& a) {
  if (!a.socket_path.empty()) return {{"path", a.socket_path}};
  return {{"host", a.host}, {"port", a.port}};
}

// Where a forward listens on this side: no bind address is loopback, "" or "*" every address.
std::string LocalBindHost(const ForwardSpec& spec) {
  const std::string& h = spec.listen.host;
  if (!spec.listen_host_given || h == "localhost") return "127.0.0.1";
  if (h.empty() || h == "*") return "0.0.0.0";
  return h;
}

// What the remote sshd is asked to listen on: as ssh does, "localhost" by default and "" for
// every address (sshd's GatewayPorts decides).
std::string RemoteBindHost(const ForwardSpec& spec) {
  const std::string& h = spec.listen.host;
  if (!spec.listen_host_given) return "localhost";
  if (h == "*") return "";
  return h;
}

std::string Reason(const Error& e) {
  std::string reason = e.details().empty() ? e.what() : std::string(Trim(e.details()[0]));
  if (reason == "a live socket is already there") reason = "Address already in use";
  return reason;
}

}  // namespace

std::string ResolveTargetHost(const std::string& host) {
  if (host.empty() || host == "localhost") return "127.0.0.1";
  in6_addr ignored;
  if (::inet_pton(AF_INET, host.c_str(), &ignored) == 1 ||
      ::inet_pton(AF_INET6, host.c_str(), &ignored) == 1) {
    return host;
  }
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* res = nullptr;
  int rc = ::getaddrinfo(host.c_str(), nullptr, &hints, &res);
  if (rc != 0 || res == nullptr) {
    throw Error(kExitUsage, Cat("cannot resolve '", host, "': ", ::gai_strerror(rc)));
  }
  std::string v4, v6;
  for (addrinfo* p = res; p != nullptr; p = p->ai_next) {
    char buf[INET6_ADDRSTRLEN] = "";
    if (p->ai_family == AF_INET && v4.empty()) {
      ::inet_ntop(AF_INET, &reinterpret_cast<sockaddr_in*>(p->ai_addr)->sin_addr, buf, sizeof buf);
      v4 = buf;
    } else if (p->ai_family == AF_INET6 && v6.empty()) {
      ::inet_ntop(AF_INET6, &reinterpret_cast<sockaddr_in6*>(p->ai_addr)->sin6_addr, buf,
                  sizeof buf);
      v6 = buf;
    }
  }
  ::freeaddrinfo(res);
  if (!v4.empty()) return v4;
  if (!v6.empty()) return v6;
  throw Error(kExitUsage, Cat("cannot resolve '", host, "'"));
}

Destination ResolveDestination(const std::string& dest, const DestinationFlags& flags) {
  Destination d;
  auto at = dest.rfind('@');
  if (at == std::string::npos) {
    for (const auto& [given, flag] :
         {std::pair{!flags.identity.empty(), "-i"}, std::pair{flags.port != 0, "-p"},
          std::pair{!flags.known_hosts.empty(), "--known-hosts"}}) {
      if (given) {
        throw Error(kExitUsage, Cat(flag, " applies to user@host destinations only"), {},
                    {Cat("a sandbox is reached with its own key and pinned host key")});
      }
    }
    ValidateSandboxName(dest);
    auto missing = [&] {
      return Error(kExitNoInput, Cat("sandbox '", dest, "' does not exist"), {},
                   {"list them: ss vm list"});
    };
    // Asked before a backend is chosen: no backend can reach a sandbox this install never made.
    if (!SandboxExists(dest)) throw missing();
    Sandbox sandbox(dest, Config::Load());
    SandboxState state = sandbox.State();
    if (state == SandboxState::kNotExists) throw missing();
    if (state != SandboxState::kRunning) {
      throw Error(kExitUnavailable, Cat("sandbox '", dest, "' is not running"), {},
                  {Cat("start it first: ss vm start --sandbox ", dest)});
    }
    d.endpoint = sandbox.Endpoint();
    d.options = sandbox.Options();
    d.sandbox = dest;
    return d;
  }
  d.endpoint.user = dest.substr(0, at);
  d.endpoint.host = dest.substr(at + 1);
  if (d.endpoint.user.empty() || d.endpoint.host.empty() ||
      d.endpoint.host.find_first_of(" \t/@") != std::string::npos) {
    throw Error(kExitDataErr, Cat("invalid destination '", dest, "'"), {},
                {"give a sandbox name or user@host"});
  }
  if (d.endpoint.host.size() > 2 && d.endpoint.host.front() == '[' &&
      d.endpoint.host.back() == ']') {
    d.endpoint.host = d.endpoint.host.substr(1, d.endpoint.host.size() - 2);
  }
  d.endpoint.port = flags.port != 0 ? flags.port : 22;
  std::string ssh_dir = HomeDir() + "/.ssh";
  if (!flags.identity.empty()) {
    if (!PathExists(flags.identity)) {
      throw Error(kExitNoInput, Cat("identity file '", flags.identity, "' does not exist"));
    }
    d.endpoint.identity_file = flags.identity;
  } else {
    for (const char* name : {"id_ed25519", "id_ecdsa", "id_rsa"}) {
      std::string path = Cat(ssh_dir, "/", name);
      if (PathExists(path)) {
        d.endpoint.identity_file = path;
        break;
      }
    }
    if (d.endpoint.identity_file.empty()) {
      throw Error(kExitNoInput, Cat("no identity file for ", dest), {},
                  {Cat("give one with -i KEY (tried ", DisplayPath(ssh_dir),
                       "/id_ed25519, id_ecdsa and id_rsa)")});
    }
  }
  if (!flags.known_hosts.empty()) {
    d.endpoint.known_hosts_file = flags.known_hosts;
  } else {
    d.endpoint.known_hosts_file = ssh_dir + "/known_hosts";
    d.endpoint.global_known_hosts_file = "/etc/ssh/ssh_known_hosts";
  }
  return d;
}

Json ForwardStatus::ToJson() const {
  Json doc = JsonDocument("TunnelForward");
  doc["direction"] = spec.direction == ForwardDirection::kLocal ? "local" : "remote";
  doc["spec"] = spec.text;
  doc["listen"] = AddressJson(listen);
  doc["target"] = AddressJson(target);
  doc["state"] = shared ? "shared" : "listening";
  return doc;
}

Tunnel::~Tunnel() = default;

std::unique_ptr<Tunnel> Tunnel::Open(SshConnection& conn, const std::vector<ForwardSpec>& specs) {
  std::unique_ptr<Tunnel> t(new Tunnel());
  for (const auto& spec : specs) {
    ForwardStatus status;
    status.spec = spec;
    status.target = spec.target;
    if (spec.direction == ForwardDirection::kLocal) {
      SocketAddress listen = spec.listen;
      if (listen.socket_path.empty()) listen.host = LocalBindHost(spec);
      try {
        status.listen = conn.ForwardLocal(listen, spec.target).bound;
      } catch (const Error& e) {
        if (e.code() == kExitRemote) throw;
        std::string where = listen.socket_path.empty()
                                ? Cat("bind [", listen.host, "]:", listen.port, ": ", Reason(e))
                                : Cat("cannot bind to path ", listen.socket_path, ": ", Reason(e));
        throw Error(kExitRemote, "could not request local forwarding", {Cat("  ", where)},
                    {Cat("the forward was ", DescribeForward(spec))});
      }
    } else {
      SocketAddress target = spec.target;
      if (target.socket_path.empty()) target.host = ResolveTargetHost(target.host);
      if (!spec.listen.socket_path.empty()) {
        auto forward = RemoteSocketForward::Start(conn, spec.listen.socket_path, {},
                                                  [target] { return std::vector{target}; });
        status.listen = spec.listen;
        status.shared = forward->shared();
        RemoteSocketForward* raw = forward.get();
        Tunnel* self = t.get();
        raw->OnEnd([self, path = spec.listen.socket_path](const std::string& why) {
          if (!self->broken_.empty()) return;
          self->broken_ = Cat("remote forward of ", path, " ended: ", why);
          if (self->on_broken_) self->on_broken_(self->broken_);
        });
        t->sockets_.push_back(std::move(forward));
      } else {
        std::string bind = RemoteBindHost(spec);
        try {
          status.listen =
              conn.ForwardRemote(bind, spec.listen.port, [target] { return target; }).bound;
        } catch (const Error& e) {
          if (std::string(e.what()).rfind("connection to", 0) == 0) throw;  // lost
          std::vector<std::string> details = {Cat("  ", e.what())};
          details.insert(details.end(), e.details().begin(), e.details().end());
          throw Error(kExitRemote,
                      Cat("remote port forwarding failed for listen port ", spec.listen.port),
                      details, {Cat("the forward was ", DescribeForward(spec))});
        }
        if (status.listen.host.empty()) status.listen.host = bind;
      }
    }
    t->forwards_.push_back(std::move(status));
  }
  return t;
}

std::vector<std::string> Tunnel::AllocatedMessages() const {
  std::vector<std::string> out;
  for (const auto& f : forwards_) {
    if (!f.spec.listen.socket_path.empty() || f.spec.listen.port != 0) continue;
    out.push_back(Cat("Allocated port ", f.listen.port, " for ",
                      f.spec.direction == ForwardDirection::kLocal ? "local" : "remote",
                      " forward to ", f.target.Describe()));
  }
  return out;
}

void Tunnel::OnBroken(std::function<void(const std::string&)> on_broken) {
  if (!broken_.empty()) {
    on_broken(broken_);
    return;
  }
  on_broken_ = std::move(on_broken);
}

}  // namespace ss
