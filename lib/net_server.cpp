#include "net_server.hpp"

// GCC 12 warns, wrongly, that Asio's coroutine frames are freed by a mismatched operator delete
// (Asio allocates and frees them with its own pair).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <array>
#include <asio/co_spawn.hpp>
#include <asio/connect.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/read.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <deque>
#include <iostream>
#include <nlohmann/json.hpp>
#include <random>

#include "dns_wire.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "http_head.hpp"
#include "net_policy.hpp"
#include "strings.hpp"
#include "timefmt.hpp"
#include "tls_hello.hpp"

namespace ss {

using asio::awaitable;
using asio::use_awaitable;
using asio::ip::tcp;
using asio::ip::udp;

namespace {

constexpr size_t kPumpBuffer = 16 * 1024;
constexpr size_t kDenialsKept = 100;

// Cancels a socket's pending operations if the deadline passes before the watchdog goes away.
template <typename Socket>
class Watchdog {
 public:
  Watchdog(Socket& socket, std::chrono::milliseconds after) : timer_(socket.get_executor(), after) {
    timer_.async_wait([&socket](std::error_code ec) {
      if (!ec) socket.cancel(ec);
    });
  }
  ~Watchdog() { timer_.cancel(); }

 private:
  asio::steady_timer timer_;
};

// The policy file, re-read when it changes (checked at every decision: a stat is cheap, and an
// edit counts from the next connection on). A file that stops parsing keeps the last good policy
// and says so once.
class PolicyFile {
 public:
  explicit PolicyFile(std::string path) : path_(std::move(path)) {
    policy_ = NetPolicyFromJson(ReadFile(path_));
    Stamp(stamp_);
  }

  const NetPolicy& Current() {
    std::string now;
    Stamp(now);
    if (now != stamp_) {
      stamp_ = now;
      try {
        policy_ = NetPolicyFromJson(ReadFile(path_));
      } catch (const Error& e) {
        std::cerr << "ss-net: warning: keeping the previous policy: " << e.what() << "\n";
      }
    }
    return policy_;
  }

 private:
  void Stamp(std::string& out) const {
    struct stat st {};
    if (stat(path_.c_str(), &st) != 0) {
      out = "missing";
      return;
    }
    out = Cat(st.st_ino, ":", st.st_size, ":", st.st_mtim.tv_sec, ".", st.st_mtim.tv_nsec);
  }

  std::string path_;
  std::string stamp_;
  NetPolicy policy_;
};

}  // namespace

struct NetServer::State : std::enable_shared_from_this<NetServer::State> {
  State(asio::io_context& io, NetServerOptions o)
      : io(io), options(std::move(o)), policy(options.policy_file), rng(std::random_device{}()) {
    if (!options.log_file.empty()) {
      log_fd.Reset(open(options.log_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
      if (!log_fd.ok()) {
        throw Error(kExitCantCreate, Cat("cannot open the log ", Quoted(options.log_file), ": ",
                                         std::strerror(errno)));
      }
    }
  }

  asio::io_context& io;
  NetServerOptions options;
  PolicyFile policy;
  Fd log_fd;
  std::mt19937 rng;
  std::deque<std::string> denials;  // the recent ones, one line each
  std::vector<tcp::acceptor> proxy, transparent, dns_tcp;
  std::vector<udp::socket> dns_udp;

  // One JSON line per connection or lookup.
  void Log(nlohmann::json event) {
    event["time"] = FormatRfc3339(NowSeconds());
    event["sandbox"] = options.sandbox;
    if (event.value("verdict", "") == "deny") {
      denials.push_back(Cat(event["time"].get<std::string>(), " ", event.value("kind", ""), " ",
                            event.value("destination", ""),
                            event.contains("port") ? Cat(":", event["port"].get<int>()) : "", ": ",
                            event.value("reason", "")));
      if (denials.size() > kDenialsKept) denials.pop_front();
    }
    if (!log_fd.ok()) return;
    std::string line = event.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
    [[maybe_unused]] ssize_t n = write(log_fd.get(), line.data(), line.size());
  }

  // The sentence a denied client reads, naming the rule and the command that allows it.
  std::string DenyReason(std::string_view destination, int port, const NetVerdict& v,
                         std::string_view address = "") const {
    std::string what = port ? Cat(destination, ":", port) : std::string(destination);
    std::string name = std::string(destination);
    if (v.rule == "internal address") {
      return Cat(what, " leads to ", address, ", an address on the host or its network, which ",
                 "sandbox ", Quoted(options.sandbox), " may not reach; to allow it: ss net allow ",
                 address);
    }
    if (v.rule == "invalid name") return Cat(Quoted(what), " is not a valid host name");
    if (v.rule == "mode none") {
      return Cat("sandbox ", Quoted(options.sandbox),
                 " has no network (mode none); to change it: "
                 "ss net mode allowlist");
    }
    if (v.rule.starts_with("deny ")) {
      return Cat(what, " is denied by the rule ", Quoted(v.rule.substr(5)), " of sandbox ",
                 Quoted(options.sandbox), "; to allow it: ss net allow ", name);
    }
    return Cat(what, " is not in the allowlist of sandbox ", Quoted(options.sandbox),
               "; to allow it: ss net allow ", name);
  }

  // ----- names, through the upstream resolver -----

  awaitable<std::string> AskUpstream(std::string query) {
    udp::socket socket(io, options.upstream_dns.protocol());
    socket.connect(options.upstream_dns);
    std::string answer(4096, '\0');
    for (int attempt = 0; attempt < 2; ++attempt) {
      co_await socket.async_send(asio::buffer(query), use_awaitable);
      Watchdog<udp::socket> watchdog(socket, options.dns_timeout / 2);
      try {
        for (;;) {
          size_t n = co_await socket.async_receive(asio::buffer(answer), use_awaitable);
          std::string_view got(answer.data(), n);
          if (n >= 2 && got.substr(0, 2) == std::string_view(query).substr(0, 2)) {
            if (n >= 4 && (static_cast<uint8_t>(got[2]) & 0x02)) break;  // truncated: use TCP
            co_return std::string(got);
          }
        }
      } catch (const std::system_error&) {
        continue;  // no answer in time: once more
      }
      co_return co_await AskUpstreamTcp(query);
    }
    co_return std::string();
  }

  awaitable<std::string> AskUpstreamTcp(const std::string& query) {
    tcp::socket socket(io);
    Watchdog<tcp::socket> watchdog(socket, options.dns_timeout);
    try {
      co_await socket.async_connect(
          tcp::endpoint(options.upstream_dns.address(), options.upstream_dns.port()),
          use_awaitable);
      std::string framed = {static_cast<char>(query.size() >> 8),
                            static_cast<char>(query.size() & 0xff)};
      framed += query;
      co_await asio::async_write(socket, asio::buffer(framed), use_awaitable);
      std::array<uint8_t, 2> length{};
      co_await asio::async_read(socket, asio::buffer(length), use_awaitable);
      std::string answer((length[0] << 8) | length[1], '\0');
      co_await asio::async_read(socket, asio::buffer(answer), use_awaitable);
      co_return answer;
    } catch (const std::system_error&) {
      co_return std::string();
    }
  }

  uint16_t NewId() { return static_cast<uint16_t>(rng()); }

  // The addresses of `host` (a name or an address literal), A records first.
  awaitable<std::vector<IpAddress>> Resolve(const std::string& host) {
    if (auto ip = ParseIpAddress(host)) co_return std::vector<IpAddress>{*ip};
    std::vector<IpAddress> out;
    for (uint16_t type : {kDnsTypeA, kDnsTypeAaaa}) {
      std::string answer = co_await AskUpstream(DnsQuery(NewId(), host, type));
      for (const std::string& raw : DnsAddresses(answer)) {
        IpAddress a;
        a.family = raw.size() == 4 ? 4 : 6;
        std::copy(raw.begin(), raw.end(), a.bytes.begin());
        out.push_back(a);
      }
      if (!out.empty()) break;
    }
    co_return out;
  }

  struct Upstream {
    std::optional<tcp::socket> socket;
    std::string address;  // where it went, for the log
    std::string error;    // why not, when socket is empty
    NetVerdict verdict;   // allowed when the address was
  };

  // Resolves and connects to host:port, to addresses the policy allows only.
  awaitable<Upstream> Connect(const std::string& host, int port) {
    Upstream up;
    std::vector<IpAddress> addresses = co_await Resolve(host);
    if (addresses.empty()) {
      up.error = Cat("cannot resolve ", Quoted(host));
      co_return up;
    }
    const NetPolicy& policy = this->policy.Current();
    for (const IpAddress& a : addresses) {
      NetVerdict v = DecideAddress(policy, a, port);
      if (!v.allowed) {
        up.verdict = v;
        up.address = a.ToString();
        continue;
      }
      up.verdict = v;
      tcp::socket socket(io);
      Watchdog<tcp::socket> watchdog(socket, options.connect_timeout);
      try {
        auto ip = asio::ip::make_address(a.ToString());
        co_await socket.async_connect(tcp::endpoint(ip, static_cast<uint16_t>(port)),
                                      use_awaitable);
        up.socket = std::move(socket);
        up.address = a.ToString();
        co_return up;
      } catch (const std::system_error& e) {
        up.error =
            Cat("cannot connect to ", a.ToString(), " port ", port, ": ",
                e.code() == asio::error::operation_aborted ? "timed out" : e.code().message());
      }
    }
    co_return up;
  }

  // ----- the byte pump -----

  // Copies from one side to the other until end of stream. A buffer is held only while bytes
  // flow: an idle tunnel waits for readability without one (200 open tunnels cost little).
  static awaitable<void> Pump(tcp::socket& from, tcp::socket& to, uint64_t& count) {
    try {
      for (;;) {
        co_await from.async_wait(tcp::socket::wait_read, use_awaitable);
        std::vector<char> data(kPumpBuffer);
        size_t n;
        do {
          n = co_await from.async_read_some(asio::buffer(data), use_awaitable);
          co_await asio::async_write(to, asio::buffer(data.data(), n), use_awaitable);
          count += n;
        } while (n == data.size());
      }
    } catch (const std::system_error& e) {
      std::error_code ignored;
      if (e.code() == asio::error::eof) {
        to.shutdown(tcp::socket::shutdown_send, ignored);
      } else {
        from.close(ignored);
        to.close(ignored);
      }
    }
  }

  static awaitable<void> Splice(tcp::socket& client, tcp::socket& upstream, uint64_t& out,
                                uint64_t& in) {
    using namespace asio::experimental::awaitable_operators;
    co_await (Pump(client, upstream, out) && Pump(upstream, client, in));
  }

  static awaitable<void> Reply(tcp::socket& client, std::string_view status,
                               std::string_view body) {
    std::string response =
        Cat("HTTP/1.1 ", status,
            "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ", body.size(),
            "\r\nConnection: close\r\n\r\n", body);
    try {
      co_await asio::async_write(client, asio::buffer(response), use_awaitable);
    } catch (const std::system_error&) {
    }
    std::error_code ignored;
    client.shutdown(tcp::socket::shutdown_send, ignored);
  }

  static awaitable<void> Refuse(tcp::socket& client, int code, std::string reason) {
    std::string body = Cat("ss-net: ", reason, "\n");
    std::string_view status = code == 403 ? "403 Forbidden" : "502 Bad Gateway";
    co_await Reply(client, status, body);
  }

  // Reads until `done(bytes)` says the start is complete, at most `limit` bytes, within the head
  // timeout. False when the client closed, stalled or sent too much.
  template <typename Done>
  awaitable<bool> ReadStart(tcp::socket& client, std::string& bytes, size_t limit, Done done) {
    Watchdog<tcp::socket> watchdog(client, options.head_timeout);
    std::vector<char> data(4096);
    try {
      while (!done(bytes)) {
        if (bytes.size() >= limit) co_return false;
        size_t n = co_await client.async_read_some(asio::buffer(data), use_awaitable);
        bytes.append(data.data(), n);
      }
    } catch (const std::system_error&) {
      co_return false;
    }
    co_return true;
  }

  // Decides, connects, and splices; a denial or a failure is answered by `refuse` instead.
  // `initial` is sent upstream first.
  template <typename Refuse>
  awaitable<void> Pass(tcp::socket& client, nlohmann::json event, const std::string& host, int port,
                       std::string initial, std::string established, Refuse refuse) {
    event["destination"] = host;
    event["port"] = port;
    NetVerdict v = Decide(policy.Current(), host, port);
    Upstream up;
    if (v.allowed) {
      up = co_await Connect(host, port);
      if (!up.socket && !up.verdict.allowed && !up.verdict.rule.empty()) v = up.verdict;
    }
    if (!v.allowed) {
      event["verdict"] = "deny";
      event["rule"] = v.rule;
      if (!up.address.empty()) event["address"] = up.address;
      event["reason"] = DenyReason(host, port, v, up.address);
      Log(event);
      co_await refuse(403, event["reason"].get<std::string>());
      co_return;
    }
    event["rule"] = v.rule;
    if (!up.socket) {
      event["verdict"] = "fail";
      event["reason"] = up.error;
      Log(event);
      co_await refuse(502, up.error);
      co_return;
    }
    event["verdict"] = "allow";
    event["address"] = up.address;
    uint64_t out = 0, in = 0;
    try {
      if (!established.empty()) {
        co_await asio::async_write(client, asio::buffer(established), use_awaitable);
      }
      if (!initial.empty()) {
        co_await asio::async_write(*up.socket, asio::buffer(initial), use_awaitable);
        out += initial.size();
      }
      co_await Splice(client, *up.socket, out, in);
    } catch (const std::system_error&) {
    }
    event["bytes_out"] = out;
    event["bytes_in"] = in;
    Log(event);
  }

  // ----- the explicit proxy -----

  awaitable<void> ServeProxy(tcp::socket client) {
    std::string bytes;
    if (!co_await ReadStart(client, bytes, kMaxHttpHead,
                            [](const std::string& b) { return HttpHeadLength(b) != 0; })) {
      co_return;
    }
    auto head = ParseHttpHead(bytes);
    auto refuse = [&](int code, std::string reason) { return Refuse(client, code, reason); };
    if (!head) {
      co_await Reply(client, "400 Bad Request", "ss-net: not an HTTP request\n");
      co_return;
    }
    std::string rest = bytes.substr(head->size);
    if (head->method == "CONNECT") {
      auto hp = ParseHostPort(head->target, 0);
      if (!hp) {
        co_await Reply(client, "400 Bad Request", "ss-net: CONNECT needs host:port\n");
        co_return;
      }
      nlohmann::json event;
      event["kind"] = "connect";
      std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
      co_await Pass(client, event, hp->host, hp->port, rest, established, refuse);
      co_return;
    }
    if (head->target == "/denials" && head->method == "GET") {
      std::string list;
      for (const std::string& line : denials) list += line + "\n";
      co_await Reply(client, "200 OK", list);
      co_return;
    }
    auto url = ParseHttpUrl(head->target);
    if (!url) {
      co_await Reply(client, "400 Bad Request",
                     "ss-net: a proxy request needs an absolute http:// URL (or CONNECT)\n");
      co_return;
    }
    nlohmann::json event;
    event["kind"] = "http";
    std::string forwarded = ForwardedHead(*head, url->path) + rest;
    co_await Pass(client, event, url->authority.host, url->authority.port, forwarded, std::string(),
                  refuse);
  }

  // ----- transparent interception -----

  static std::optional<tcp::endpoint> OriginalDestination(tcp::socket& client) {
    int fd = client.native_handle();
    sockaddr_storage ss{};
    socklen_t length = sizeof ss;
    if (client.local_endpoint().address().is_v6() &&
        !client.local_endpoint().address().to_v6().is_v4_mapped()) {
      if (getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &ss, &length) != 0) return std::nullopt;
    } else if (getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &ss, &length) != 0) {
      return std::nullopt;
    }
    // The kernel may leave `length` as it was: read the address by its family, never by length.
    if (ss.ss_family == AF_INET) {
      sockaddr_in in{};
      std::memcpy(&in, &ss, sizeof in);
      return tcp::endpoint(asio::ip::address_v4(ntohl(in.sin_addr.s_addr)), ntohs(in.sin_port));
    }
    if (ss.ss_family == AF_INET6) {
      sockaddr_in6 in6{};
      std::memcpy(&in6, &ss, sizeof in6);
      asio::ip::address_v6::bytes_type bytes;
      std::memcpy(bytes.data(), &in6.sin6_addr, bytes.size());
      return tcp::endpoint(asio::ip::address_v6(bytes), ntohs(in6.sin6_port));
    }
    return std::nullopt;
  }

  awaitable<void> ServeTransparent(tcp::socket client) {
    auto original = OriginalDestination(client);
    if (!original) co_return;  // not redirected: nothing to decide on
    int port = original->port();
    std::string bytes;
    ClientHello hello;
    bool tls = false;
    auto complete = [&](const std::string& b) {
      if (b.empty()) return false;
      tls = static_cast<uint8_t>(b[0]) == 22;
      if (tls) {
        hello = ParseClientHello(b);
        return hello.status != ClientHello::kNeedMore;
      }
      return HttpHeadLength(b) != 0;
    };
    if (!co_await ReadStart(client, bytes, tls ? kMaxClientHello : kMaxHttpHead, complete)) {
      co_return;
    }
    auto reset = [&](int, std::string) -> awaitable<void> {
      std::error_code ignored;
      client.set_option(asio::socket_base::linger(true, 0), ignored);
      client.close(ignored);
      co_return;
    };
    nlohmann::json event = {{"kind", tls ? "tls" : "http"}, {"transparent", true}};
    if (tls) {
      std::string why;
      if (hello.status != ClientHello::kDone)
        why = "not a well-formed TLS ClientHello";
      else if (hello.ech)
        why = "an encrypted ClientHello hides the server name";
      else if (hello.sni.empty())
        why = "no server name (SNI) in the TLS ClientHello";
      if (!why.empty()) {
        event.update({{"destination", original->address().to_string()},
                      {"port", port},
                      {"verdict", "deny"},
                      {"rule", "sni"},
                      {"reason", why}});
        Log(event);
        co_await reset(0, why);
        co_return;
      }
      event["sni"] = hello.sni;
      co_await Pass(client, event, hello.sni, port, bytes, std::string(), reset);
      co_return;
    }
    auto head = ParseHttpHead(bytes);
    std::optional<HostPort> hp;
    if (head && head->Header("Host")) hp = ParseHostPort(*head->Header("Host"), port);
    if (!hp) {
      co_await Reply(client, "400 Bad Request", "ss-net: an HTTP request without a Host\n");
      co_return;
    }
    auto refuse = [&](int code, std::string reason) { return Refuse(client, code, reason); };
    event["host"] = hp->host;
    // The port is where the sandbox connected; the Host header names only the server.
    co_await Pass(client, event, hp->host, port,
                  ForwardedHead(*head, head->target) + bytes.substr(head->size), std::string(),
                  refuse);
  }

  // ----- the resolver -----

  static bool AnsweredType(uint16_t type) {
    return type == kDnsTypeA || type == kDnsTypeAaaa || type == kDnsTypeCname ||
           type == kDnsTypeHttps || type == kDnsTypeSvcb;
  }

  // The reply to one query; empty to stay silent (not a query at all).
  awaitable<std::string> Answer(std::string query, std::string transport) {
    auto q = ParseDnsQuery(query);
    if (!q) co_return std::string();
    nlohmann::json event = {{"kind", "dns"},
                            {"destination", q->name},
                            {"type", DnsTypeName(q->type)},
                            {"transport", transport}};
    auto deny = [&](int rcode, std::string rule, std::string reason) {
      event.update({{"verdict", "deny"}, {"rule", rule}, {"reason", reason}});
      Log(event);
      return DnsReply(query, *q, rcode);
    };
    if (!q->host_name || q->klass != 1) {
      std::string reason = Cat(Quoted(q->name), " is not a host name");
      co_return deny(kDnsNxDomain, "invalid name", reason);
    }
    NetVerdict v = Decide(policy.Current(), q->name, 0);
    if (!v.allowed) co_return deny(kDnsNxDomain, v.rule, DenyReason(q->name, 0, v));
    if (!AnsweredType(q->type)) {
      co_return deny(kDnsRefused, "type",
                     Cat("lookups of type ", DnsTypeName(q->type), " are not answered"));
    }
    // Only the question goes upstream (no additional records, no EDNS options), with a new id.
    std::string upstream_query = DnsQuery(NewId(), q->name, q->type);
    std::string answer = co_await AskUpstream(upstream_query);
    auto uq = ParseDnsQuery(upstream_query);
    if (answer.empty() || !DnsAnswers(answer, upstream_query, *uq)) {
      event.update({{"verdict", "fail"}, {"rule", v.rule}, {"reason", "no answer upstream"}});
      Log(event);
      co_return DnsReply(query, *q, kDnsServFail);
    }
    event.update({{"verdict", "allow"}, {"rule", v.rule}});
    Log(event);
    // The client's id, the client's question (its case), the upstream's answer.
    answer.replace(0, 2, query.substr(0, 2));
    answer.replace(12, q->end - 12, query.substr(12, q->end - 12));
    co_return answer;
  }

  awaitable<void> ServeDnsUdp(udp::socket& socket) {
    std::vector<char> data(4096);
    for (;;) {
      udp::endpoint from;
      size_t n = 0;
      try {
        n = co_await socket.async_receive_from(asio::buffer(data), from, use_awaitable);
      } catch (const std::system_error& e) {
        if (e.code() == asio::error::operation_aborted) co_return;
        continue;
      }
      asio::co_spawn(
          io,
          [self = shared_from_this(), &socket, from,
           query = std::string(data.data(), n)]() -> awaitable<void> {
            std::string reply = co_await self->Answer(query, "udp");
            if (reply.size() > 512) {  // too large for plain UDP: truncated, the client retries
              auto q = ParseDnsQuery(query);
              reply = DnsReply(query, *q, 0);
              reply[2] = static_cast<char>(reply[2] | 0x02);
            }
            if (!reply.empty()) {
              std::error_code ignored;
              socket.send_to(asio::buffer(reply), from, 0, ignored);
            }
          },
          asio::detached);
    }
  }

  awaitable<void> ServeDnsTcp(tcp::socket client) {
    try {
      for (;;) {
        std::array<uint8_t, 2> length{};
        std::string query;
        {
          Watchdog<tcp::socket> watchdog(client, options.head_timeout);
          co_await asio::async_read(client, asio::buffer(length), use_awaitable);
          query.resize((length[0] << 8) | length[1]);
          co_await asio::async_read(client, asio::buffer(query), use_awaitable);
        }
        std::string reply = co_await Answer(query, "tcp");
        if (reply.empty()) co_return;
        std::string framed = {static_cast<char>(reply.size() >> 8),
                              static_cast<char>(reply.size() & 0xff)};
        framed += reply;
        co_await asio::async_write(client, asio::buffer(framed), use_awaitable);
      }
    } catch (const std::system_error&) {
    }
  }

  // ----- listening -----

  template <typename Serve>
  awaitable<void> Accept(tcp::acceptor& acceptor, Serve serve) {
    for (;;) {
      try {
        tcp::socket client = co_await acceptor.async_accept(use_awaitable);
        asio::co_spawn(io, (this->*serve)(std::move(client)),
                       [keep = shared_from_this()](std::exception_ptr) {});
      } catch (const std::system_error& e) {
        if (e.code() == asio::error::operation_aborted) co_return;
      }
    }
  }

  // The sandbox's bridge may not have its address yet (Podman's appears with the container's
  // first start, after the fence and ss-net must already be there): bind to it anyway.
  using FreeBind = asio::detail::socket_option::boolean<IPPROTO_IP, IP_FREEBIND>;

  tcp::acceptor Listen(const tcp::endpoint& at, std::string_view what) {
    tcp::acceptor acceptor(io);
    std::error_code ec;
    acceptor.open(at.protocol(), ec);
    if (!ec) acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
    if (!ec && at.address().is_v4()) acceptor.set_option(FreeBind(true), ec);
    if (!ec) acceptor.bind(at, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      throw Error(kExitUnavailable,
                  Cat("cannot listen for the ", what, " on ", at.address().to_string(), " port ",
                      at.port(), ": ", ec.message()));
    }
    return acceptor;
  }

  void Start() {
    for (const auto& at : options.proxy) proxy.push_back(Listen(at, "proxy"));
    for (const auto& at : options.transparent) {
      transparent.push_back(Listen(at, "transparent proxy"));
    }
    for (const auto& at : options.dns) {
      udp::socket socket(io);
      std::error_code ec;
      socket.open(at.protocol(), ec);
      if (!ec && at.address().is_v4()) socket.set_option(FreeBind(true), ec);
      if (!ec) socket.bind(at, ec);
      if (ec) {
        throw Error(kExitUnavailable, Cat("cannot listen for DNS on ", at.address().to_string(),
                                          " port ", at.port(), ": ", ec.message()));
      }
      // The TCP side on the same port as the UDP side (its port chosen there when 0).
      dns_tcp.push_back(
          Listen(tcp::endpoint(at.address(), socket.local_endpoint().port()), "DNS over TCP"));
      dns_udp.push_back(std::move(socket));
    }
    auto self = shared_from_this();
    for (auto& a : proxy) asio::co_spawn(io, Accept(a, &State::ServeProxy), asio::detached);
    for (auto& a : transparent) {
      asio::co_spawn(io, Accept(a, &State::ServeTransparent), asio::detached);
    }
    for (auto& a : dns_tcp) asio::co_spawn(io, Accept(a, &State::ServeDnsTcp), asio::detached);
    for (auto& s : dns_udp) asio::co_spawn(io, ServeDnsUdp(s), asio::detached);
  }

  void Stop() {
    std::error_code ignored;
    for (auto& a : proxy) a.close(ignored);
    for (auto& a : transparent) a.close(ignored);
    for (auto& a : dns_tcp) a.close(ignored);
    for (auto& s : dns_udp) s.close(ignored);
  }
};

NetServer::NetServer(asio::io_context& io, NetServerOptions options)
    : state_(std::make_shared<State>(io, std::move(options))) {
  state_->Start();
}

NetServer::~NetServer() { state_->Stop(); }

std::vector<tcp::endpoint> NetServer::ProxyEndpoints() const {
  std::vector<tcp::endpoint> out;
  for (const auto& a : state_->proxy) out.push_back(a.local_endpoint());
  return out;
}

std::vector<tcp::endpoint> NetServer::TransparentEndpoints() const {
  std::vector<tcp::endpoint> out;
  for (const auto& a : state_->transparent) out.push_back(a.local_endpoint());
  return out;
}

std::vector<udp::endpoint> NetServer::DnsEndpoints() const {
  std::vector<udp::endpoint> out;
  for (const auto& s : state_->dns_udp) out.push_back(s.local_endpoint());
  return out;
}

}  // namespace ss
