// ss-net: a sandbox's egress. `serve` is the host-side proxy and resolver that are a sandbox's only
// ways out; allow, deny, mode and ls change and show its policy (a running server follows within
// a second); log shows what it let through and what it refused.
#include <fcntl.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <asio/buffer.hpp>
#include <asio/io_context.hpp>
#include <asio/ip/tcp.hpp>
#include <asio/posix/stream_descriptor.hpp>
#include <asio/signal_set.hpp>
#include <asio/write.hpp>
#include <fstream>
#include <functional>
#include <iostream>
#include <nlohmann/json.hpp>
#include <optional>
#include <thread>

#include "egress.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "host_networks.hpp"
#include "net_ca.hpp"
#include "net_fence.hpp"
#include "net_line.hpp"
#include "net_policy.hpp"
#include "net_server.hpp"
#include "net_store.hpp"
#include "paths.hpp"
#include "sandbox.hpp"
#include "strings.hpp"
#include "tool.hpp"

namespace ss {
namespace {

asio::ip::address ParseAddress(const std::string& text, std::string_view what) {
  std::error_code ec;
  auto a = asio::ip::make_address(text, ec);
  if (ec) throw Error(kExitUsage, Cat(what, ": ", Quoted(text), " is not an IP address"));
  return a;
}

template <typename Endpoint>
Endpoint ParseEndpoint(const std::string& text, std::string_view what, int default_port) {
  std::string host = text;
  int port = default_port;
  size_t colon = text.rfind(':');
  bool bracketed = text.starts_with("[");
  if (colon != std::string::npos &&
      (bracketed ? text[colon - 1] == ']' : text.find(':') == colon)) {
    auto p = ParseDecimal(std::string_view(text).substr(colon + 1));
    if (!p || *p < 0 || *p > 65535)
      throw Error(kExitUsage, Cat(what, ": bad port in ", Quoted(text)));
    port = static_cast<int>(*p);
    host = text.substr(0, colon);
  }
  if (bracketed) host = host.substr(1, host.size() - 2);
  if (port < 0) throw Error(kExitUsage, Cat(what, " needs ADDR:PORT, not ", Quoted(text)));
  return Endpoint(ParseAddress(host, what), static_cast<uint16_t>(port));
}

// The first nameserver of /etc/resolv.conf: the host's own resolver.
std::string HostResolver() {
  std::ifstream in("/etc/resolv.conf");
  std::string line;
  while (std::getline(in, line)) {
    auto words = Split(std::string(Trim(line)), ' ');
    if (words.size() >= 2 && words[0] == "nameserver") return words[1];
  }
  throw Error(kExitUnavailable, "no nameserver in /etc/resolv.conf", {},
              {"name one: ss-net serve --upstream-dns ADDR"});
}

int Serve(const NetLine& o) {
  ValidateSandboxName(o.sandbox);
  NetServerOptions s;
  s.sandbox = o.sandbox;
  s.policy_file = o.policy.empty() ? NetPolicyPath(o.sandbox) : o.policy;
  if (o.policy.empty()) WriteNetPolicy(o.sandbox);
  s.log_file = o.log.empty() ? NetLogPath(o.sandbox) : o.log;
  if (const char* max = std::getenv("SS_NET_LOG_MAX_BYTES"); max && *max) {
    auto n = ParseDecimal(max);
    if (!n || *n < 1) {
      throw Error(kExitUsage,
                  Cat("SS_NET_LOG_MAX_BYTES: ", Quoted(max), " is not a size in bytes"));
    }
    s.log_max_bytes = static_cast<uint64_t>(*n);
  }
  for (const auto& p : o.proxy)
    s.proxy.push_back(ParseEndpoint<asio::ip::tcp::endpoint>(p, "--proxy", -1));
  for (const auto& p : o.transparent) {
    s.transparent.push_back(ParseEndpoint<asio::ip::tcp::endpoint>(p, "--transparent", -1));
  }
  for (const auto& p : o.dns)
    s.dns.push_back(ParseEndpoint<asio::ip::udp::endpoint>(p, "--dns", -1));
  s.upstream_dns = ParseEndpoint<asio::ip::udp::endpoint>(
      o.upstream_dns.empty() ? HostResolver() : o.upstream_dns, "--upstream-dns", 53);
  // Its descriptors are its sandbox's connections: all the host lets it have, of which the
  // sandbox gets its share (the rest stays for ss-net's own files).
  RaiseOpenFileLimit();
  s.max_connections = o.connections;
  asio::io_context io;
  NetServer server(io, s);
  // Where it listens, once everything is bound: one JSON line (ports chosen for 0 included).
  nlohmann::json ready = {{"kind", "NetServer"},
                          {"version", 1},
                          {"sandbox", o.sandbox},
                          {"proxy", nlohmann::json::array()},
                          {"transparent", nlohmann::json::array()},
                          {"dns", nlohmann::json::array()}};
  auto show = [](const auto& e) {
    return e.address().is_v6() ? Cat("[", e.address().to_string(), "]:", e.port())
                               : Cat(e.address().to_string(), ":", e.port());
  };
  for (const auto& e : server.ProxyEndpoints()) ready["proxy"].push_back(show(e));
  for (const auto& e : server.TransparentEndpoints()) ready["transparent"].push_back(show(e));
  for (const auto& e : server.DnsEndpoints()) ready["dns"].push_back(show(e));
  std::cout << ready.dump() << std::endl;
  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  signals.async_wait([&](std::error_code, int) { io.stop(); });
  signal(SIGPIPE, SIG_IGN);
  io.run();
  return 0;
}

// One direction of a relay: what `from` reads, `to` writes; at the end of `from`, `done`.
template <typename From, typename To>
void Pump(From& from, To& to, std::array<char, 16384>& buf, std::function<void()> done) {
  from.async_read_some(asio::buffer(buf), [&from, &to, &buf, done](std::error_code ec, size_t n) {
    if (ec) return done();
    asio::async_write(to, asio::buffer(buf.data(), n),
                      [&from, &to, &buf, done](std::error_code written, size_t) {
                        if (written) return done();
                        Pump(from, to, buf, done);
                      });
  });
}

// QEMU's guestfwd runs this for each connection of the guest to ss-net's address, with the
// connection on standard input, output and error. The port is read for each connection: ss-net
// is started again on other ports when it was gone. With ss-net not running, the connection is
// closed at once: the guest reaches nothing.
int Relay(const NetLine& o) {
  // Standard error is the guest's connection too (under QEMU): nothing of ours goes there.
  struct stat in_st {
  }, err_st{};
  if (::fstat(0, &in_st) == 0 && ::fstat(2, &err_st) == 0 && S_ISSOCK(in_st.st_mode) &&
      in_st.st_ino == err_st.st_ino && in_st.st_dev == err_st.st_dev) {
    int null_fd = ::open("/dev/null", O_WRONLY | O_CLOEXEC);
    if (null_fd >= 0) {
      ::dup2(null_fd, 2);
      ::close(null_fd);
    }
  }
  ValidateSandboxName(o.sandbox);
  auto service = o.to == "proxy" ? EgressService::kProxy : EgressService::kDns;
  std::optional<int> port = EgressLoopbackPort(o.sandbox, service);
  if (!port) {
    throw Error(kExitUnavailable,
                Cat("the network proxy of sandbox ", Quoted(o.sandbox), " is not running"), {},
                {"ss starts it with the sandbox's next command"});
  }
  signal(SIGPIPE, SIG_IGN);
  asio::io_context io;
  asio::ip::tcp::socket up(io);
  std::error_code ec;
  up.connect({asio::ip::address_v4::loopback(), static_cast<uint16_t>(*port)}, ec);
  if (ec) {
    throw Error(kExitUnavailable, Cat("cannot reach the network proxy of sandbox ",
                                      Quoted(o.sandbox), ": ", ec.message()));
  }
  asio::posix::stream_descriptor in(io, ::dup(0)), out(io, ::dup(1));
  std::array<char, 16384> to_up{}, to_guest{};
  Pump(in, up, to_up, [&] {
    std::error_code ignored;
    up.shutdown(asio::ip::tcp::socket::shutdown_send, ignored);
  });
  Pump(up, out, to_guest, [&] {
    // The guest sees the end of the connection (a socket under QEMU; a pipe in tests).
    if (::shutdown(out.native_handle(), SHUT_WR) != 0) out.close();
  });
  io.run();
  return 0;
}

int Ls(const std::string& sandbox, const NetPolicy& policy, bool json) {
  if (json) {
    nlohmann::json j = nlohmann::json::parse(NetPolicyToJson(policy));
    j["kind"] = "NetPolicy";
    j["version"] = 1;
    j["sandbox"] = sandbox;
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  std::cout << "Sandbox '" << sandbox << "': mode " << NetModeName(policy.mode) << "\n";
  for (const auto& r : policy.allow) std::cout << "  allow " << r.text << "\n";
  for (const auto& r : policy.deny) std::cout << "  deny  " << r.text << "\n";
  return 0;
}

std::string LogLine(const std::string& line) {
  auto j = nlohmann::json::parse(line, nullptr, false);
  if (!j.is_object()) return Printable(line);
  std::string where = j.value("destination", "");
  if (j.contains("port")) where += Cat(":", j["port"].get<int>());
  std::string text = Cat(j.value("time", ""), "  ", j.value("verdict", ""), "  ",
                         j.value("kind", ""), "  ", where);
  if (j.contains("type")) text += Cat(" ", j["type"].get<std::string>());
  if (j.contains("rule")) text += Cat("  (", j["rule"].get<std::string>(), ")");
  if (j.contains("bytes_out")) {
    text += Cat("  ", j["bytes_out"].get<uint64_t>(), " B out, ", j["bytes_in"].get<uint64_t>(),
                " B in");
  }
  if (j.value("verdict", "") != "allow" && j.contains("reason")) {
    text += Cat("\n    ", j["reason"].get<std::string>());
  }
  return Printable(text, true);
}

// Prints the complete lines of `fd` from where it is; a last line without its newline yet is kept
// in `partial` for the next call.
void PrintLogLines(int fd, bool json, std::string& partial) {
  std::array<char, 65536> buf;
  for (;;) {
    ssize_t n = read(fd, buf.data(), buf.size());
    if (n <= 0) return;
    partial.append(buf.data(), static_cast<size_t>(n));
    size_t start = 0;
    for (size_t end; (end = partial.find('\n', start)) != std::string::npos; start = end + 1) {
      std::string line = partial.substr(start, end - start);
      std::cout << (json ? line : LogLine(line)) << "\n";
    }
    partial.erase(0, start);
  }
}

// The log past its size is log.jsonl.1 (ss-net serve rotates it): shown first, then log.jsonl;
// following, a rotation is seen (the path names another file) and the new file read from its
// start, after what was left of the old one.
int Log(const std::string& sandbox, bool json, bool follow) {
  std::string path = NetLogPath(sandbox);
  Fd fd(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok() && !follow) {
    throw Error(kExitNoInput, Cat("sandbox ", Quoted(sandbox), " has no network log yet"), {},
                {"it starts with the sandbox's first connection"});
  }
  std::string partial;
  if (Fd older(open((path + ".1").c_str(), O_RDONLY | O_CLOEXEC)); older.ok()) {
    PrintLogLines(older.get(), json, partial);
    partial.clear();
  }
  for (;;) {
    if (fd.ok()) PrintLogLines(fd.get(), json, partial);
    if (!follow) return 0;
    std::cout.flush();
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    struct stat now {
    }, open_one{};
    bool there = stat(path.c_str(), &now) == 0;
    if (fd.ok() && there && fstat(fd.get(), &open_one) == 0 && now.st_ino == open_one.st_ino &&
        now.st_dev == open_one.st_dev) {
      continue;
    }
    if (!there) continue;
    // Rotated (or first created): the rest of the old file, then the new one from its start.
    if (fd.ok()) PrintLogLines(fd.get(), json, partial);
    partial.clear();
    fd.Reset(open(path.c_str(), O_RDONLY | O_CLOEXEC));
  }
}

int Run(const NetLine& o) {
  if (o.help) {
    std::cout << NetCommands().Help();
    return 0;
  }
  if (o.verb == "serve") return Serve(o);
  if (o.verb == "relay") return Relay(o);
  if (o.verb == "ca") {
    std::cout << NetCa::LoadOrCreate().cert_pem();
    return 0;
  }
  if (o.verb == "fence") {
    ValidateSandboxName(o.sandbox);
    if (o.words[0] == "remove") {
      RemoveNetFence(o.sandbox);
      return 0;
    }
    if (o.words[0] == "check") return NetFenceInstalled(o.sandbox) ? 0 : 1;
    NetFence fence = o.fence;
    fence.sandbox = o.sandbox;
    // Through sudo (ss vm setup lets the engine's group run this), only a sandbox's own bridge.
    if (getenv("SUDO_UID") && !fence.interface.starts_with("ssn-")) {
      throw Error(kExitNoPerm,
                  Cat("through sudo, ss-net fences only sandboxes' bridges (ssn-*), not ",
                      Quoted(fence.interface)));
    }
    ApplyNetFence(fence);
    return 0;
  }
  std::string sandbox = ResolveSandboxName(o.sandbox);
  if (o.verb == "log") return Log(sandbox, o.json, o.follow);
  if (o.verb == "ls") return Ls(sandbox, LoadNetPolicy(sandbox), o.json);
  // What is asked is checked first (64, 65), then the sandbox: a change is for a sandbox this
  // install made, and a mistyped name must not pass for done (66).
  std::optional<HostNetworks> host;  // read once, for the first address rule
  for (const std::string& text : o.verb == "mode" ? std::vector<std::string>{} : o.words) {
    NetRule rule = ParseNetRule(text);
    // An allow rule that nothing could ever pass is a mistake to say, not to keep.
    if (o.verb != "allow" || rule.kind != NetRule::kNetwork) continue;
    if (!host) host = HostNetworksOf(ReadInterfaceAddresses());
    if (std::string why = NeverAllowed(rule, *host); !why.empty()) {
      throw Error(kExitDataErr, Cat(Quoted(rule.text), " is ", why, ": no rule opens it"),
                  {"a sandbox never reaches the host itself, ss's ports or another sandbox, in "
                   "any mode"},
                  {"to give it one service of the host: ss tunnel -R PORT:127.0.0.1:PORT "
                   "SANDBOX"});
    }
  }
  if (o.verb == "mode" && !ParseNetMode(o.words[0])) {
    throw Error(kExitUsage, Cat("unknown mode ", Quoted(o.words[0])), {},
                {"modes: allowlist, open, none"});
  }
  auto known = KnownSandboxes();
  if (std::find(known.begin(), known.end(), sandbox) == known.end()) {
    throw Error(kExitNoInput, Cat("sandbox ", Quoted(sandbox), " does not exist"), {},
                {known.empty() ? std::string("create it: ss vm start --sandbox ") + sandbox
                               : Cat("sandboxes: ", Join(known, ", "))});
  }
  ChangeNetPolicy(sandbox, o.verb, o.words);
  return Ls(sandbox, LoadNetPolicy(sandbox), false);
}

int Complete(const Args& words) {
  const std::string prev = words.size() >= 2 ? words[words.size() - 2] : "";
  if (prev == "mode" && words.size() == 2) {
    for (const char* m : {"allowlist", "open", "none"}) std::cout << m << "\n";
    return 0;
  }
  if (prev == "--sandbox") {
    for (const auto& n : KnownSandboxes()) std::cout << n << "\n";
    return 0;
  }
  std::string out;
  NetCommands().Complete(words, out);
  std::cout << out;
  return 0;
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss-net", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete")
      return ss::Complete({args.begin() + 1, args.end()});
    return ss::Run(ss::ParseNetLine(args));
  });
}
