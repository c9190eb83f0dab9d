// ss-ssh-test: drives the SSH layer from tests and benchmarks (not installed, not for users).
//
//   ss-ssh-test [CONNECTION] [-L LISTEN=TARGET]... [-R PORT=TARGET]... COMMAND [ARGS...]
//
// CONNECTION: --host H (127.0.0.1) --port P --user U --key FILE --known-hosts FILE --name NAME
//             --keepalive SECONDS
// LISTEN, TARGET: HOST:PORT or /path/to.sock; PORT for -R (0: any)
//
//   run ARGV...             one-shot command; prints its stdout and stderr, exits with its status
//   stream ARGV...          streamed command (our stdin/stdout/stderr)
//   pty [ARGV...]           interactive session (--secret NAME passes $NAME as a secret,
//                           --cwd DIR, --term TERM)
//   forward                 forwards only, until SIGINT or SIGTERM
//   bench-exec N            N one-shot `true` on one connection; prints p50/p95 in ms as JSON
//   keygen PATH COMMENT     writes an ed25519 key pair
//   pin FILE HOST PORT PUB  pins the public key file PUB for HOST:PORT in known_hosts FILE
//   free-port               prints a free loopback TCP port
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <asio/signal_set.hpp>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "error.hpp"
#include "fs.hpp"
#include "ssh.hpp"
#include "ssh_keys.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace ss {
namespace {

SocketAddress ParseAddress(const std::string& s) {
  SocketAddress a;
  if (!s.empty() && s[0] == '/') {
    a.socket_path = s;
    return a;
  }
  auto colon = s.rfind(':');
  if (colon == std::string::npos) {
    a.port = std::atoi(s.c_str());
  } else {
    a.host = s.substr(0, colon);
    a.port = std::atoi(s.c_str() + colon + 1);
  }
  return a;
}

std::pair<std::string, std::string> SplitSpec(const std::string& spec) {
  auto eq = spec.find('=');
  if (eq == std::string::npos) throw Error(kExitUsage, Cat("bad forward '", spec, "'"));
  return {spec.substr(0, eq), spec.substr(eq + 1)};
}

int FreePort() {
  int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a);
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  ::close(fd);
  return ntohs(a.sin_port);
}

int Main(const Args& args) {
  SshEndpoint ep;
  ep.host = "127.0.0.1";
  SshOptions options;
  std::vector<std::string> locals, remotes, secrets;
  InteractiveOptions pty;
  size_t i = 0;
  auto value = [&](const std::string& flag) {
    if (i + 1 >= args.size()) throw Error(kExitUsage, Cat(flag, " needs a value"));
    return args[++i];
  };
  for (; i < args.size() && args[i].rfind("-", 0) == 0; ++i) {
    const std::string& a = args[i];
    if (a == "--host") {
      ep.host = value(a);
    } else if (a == "--port") {
      ep.port = std::atoi(value(a).c_str());
    } else if (a == "--user") {
      ep.user = value(a);
    } else if (a == "--key") {
      ep.identity_file = value(a);
    } else if (a == "--known-hosts") {
      ep.known_hosts_file = value(a);
    } else if (a == "--name") {
      options.name = value(a);
    } else if (a == "--keepalive") {
      options.keepalive_interval = std::chrono::seconds(std::atoi(value(a).c_str()));
    } else if (a == "-L") {
      locals.push_back(value(a));
    } else if (a == "-R") {
      remotes.push_back(value(a));
    } else if (a == "--secret") {
      secrets.push_back(value(a));
    } else if (a == "--cwd") {
      pty.cwd = value(a);
    } else if (a == "--term") {
      pty.term = value(a);
    } else {
      throw Error(kExitUsage, Cat("unknown option '", a, "'"));
    }
  }
  if (i >= args.size()) throw Error(kExitUsage, "no command");
  std::string command = args[i++];
  std::vector<std::string> rest(args.begin() + static_cast<long>(i), args.end());
  if (!rest.empty() && rest[0] == "--") rest.erase(rest.begin());

  if (command == "keygen" && rest.size() == 2) {
    WriteKeyPair(rest[0], GenerateEd25519Key(rest[1]));
    return 0;
  }
  if (command == "pin" && rest.size() == 4) {
    PinHostKey(rest[0], rest[1], std::atoi(rest[2].c_str()), ReadPublicKey(rest[3]));
    return 0;
  }
  if (command == "free-port") {
    std::cout << FreePort() << "\n";
    return 0;
  }

  EnvList secret_env;
  for (const auto& name : secrets) {
    const char* v = std::getenv(name.c_str());
    secret_env.emplace_back(name, v ? v : "");
  }
  SshConnection conn(ep, options);
  for (const auto& spec : locals) {
    auto [listen, target] = SplitSpec(spec);
    ForwardInfo f = conn.ForwardLocal(ParseAddress(listen), ParseAddress(target));
    std::cerr << "listening on " << f.bound.Describe() << std::endl;
  }
  for (const auto& spec : remotes) {
    auto [port, target] = SplitSpec(spec);
    SocketAddress to = ParseAddress(target);
    ForwardInfo f = conn.ForwardRemote("127.0.0.1", std::atoi(port.c_str()), [to] { return to; });
    std::cerr << "remote port " << f.bound.port << std::endl;
  }

  if (command == "run") {
    ExecOptions o;
    o.secret_env = secret_env;
    ExecResult r = conn.Exec(rest, o);
    std::cout << r.out << std::flush;
    std::cerr << r.err << std::flush;
    return r.status;
  }
  if (command == "stream") {
    StreamOptions o;
    o.secret_env = secret_env;
    return conn.ExecStream(rest, o);
  }
  if (command == "pty") {
    pty.argv = rest;
    pty.secret_env = secret_env;
    return conn.RunInteractive(pty);
  }
  if (command == "forward") {
    asio::signal_set signals(conn.io_context(), SIGINT, SIGTERM);
    signals.async_wait([&](const asio::error_code&, int) { conn.Stop(); });
    conn.Run();
    return 0;
  }
  if (command == "bench-exec" && rest.size() == 1) {
    int n = std::atoi(rest[0].c_str());
    std::vector<double> ms;
    for (int k = 0; k < n; ++k) {
      auto start = std::chrono::steady_clock::now();
      if (conn.Exec({"true"}).status != 0) throw Error(kExitSoftware, "true failed");
      ms.push_back(
          std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
              .count());
    }
    std::sort(ms.begin(), ms.end());
    auto at = [&](double q) { return ms[static_cast<size_t>(q * (ms.size() - 1))]; };
    std::printf("{\"runs\":%d,\"p50_ms\":%.3f,\"p95_ms\":%.3f,\"min_ms\":%.3f}\n", n, at(0.5),
                at(0.95), ms.front());
    return 0;
  }
  throw Error(kExitUsage, Cat("unknown command '", command, "'"));
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) { return ss::RunTool("ss-ssh-test", argc, argv, ss::Main); }
