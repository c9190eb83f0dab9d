#include "net_server.hpp"

// GCC 12 warns, wrongly, that Asio's coroutine frames are freed by a mismatched operator delete
// (Asio allocates and frees them with its own pair).
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <asio/co_spawn.hpp>
#include <asio/connect.hpp>
#include <asio/detached.hpp>
#include <asio/experimental/awaitable_operators.hpp>
#include <asio/post.hpp>
#include <asio/read.hpp>
#include <asio/redirect_error.hpp>
#include <asio/ssl.hpp>
#include <asio/steady_timer.hpp>
#include <asio/use_awaitable.hpp>
#include <asio/write.hpp>
#include <deque>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "dns_wire.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "host_networks.hpp"
#include "http_head.hpp"
#include "http_inject.hpp"
#include "net_ca.hpp"
#include "net_policy.hpp"
#include "net_secrets.hpp"
#include "platform.hpp"
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
// At most this much moves through a tunnel's pipe at a time (a pipe's default capacity).
constexpr size_t kSpliceChunk = 64 * 1024;
constexpr size_t kDenialsKept = 100;
// Descriptors kept back from the sandbox's share: listeners, the log, the policy file, the CA.
constexpr int kReservedDescriptors = 64;
// Each connection or lookup served holds at most this many descriptors.
constexpr int kDescriptorsPerConnection = 3;
// A listener whose accept fails (out of descriptors, of buffers) waits before the next try,
// from the first to the last, doubling: it never spins.
constexpr std::chrono::milliseconds kAcceptBackoffFirst{20};
constexpr std::chrono::milliseconds kAcceptBackoffLast{1000};

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
    out = Cat(st.st_ino, ":", st.st_size, ":", platform::ModifiedNs(st));
  }

  std::string path_;
  std::string stamp_;
  NetPolicy policy_;
};

// The client's connection as TLS sees it: the bytes ss-net already read from it to decide (the
// transparent proxy's ClientHello) come first, then the socket's.
class PrefixedSocket {
 public:
  using executor_type = tcp::socket::executor_type;
  using lowest_layer_type = tcp::socket::lowest_layer_type;

  PrefixedSocket(tcp::socket& socket, std::string prefix)
      : socket_(socket), prefix_(std::move(prefix)) {}

  executor_type get_executor() { return socket_.get_executor(); }
  lowest_layer_type& lowest_layer() { return socket_.lowest_layer(); }
  const lowest_layer_type& lowest_layer() const { return socket_.lowest_layer(); }

  template <typename Buffers, typename Token>
  auto async_read_some(const Buffers& buffers, Token&& token) {
    return asio::async_initiate<Token, void(std::error_code, size_t)>(
        [this](auto handler, const Buffers& buffers) {
          if (prefix_.empty()) {
            socket_.async_read_some(buffers, std::move(handler));
            return;
          }
          size_t n = asio::buffer_copy(buffers, asio::buffer(prefix_));
          prefix_.erase(0, n);
          asio::post(socket_.get_executor(), [handler = std::move(handler), n]() mutable {
            std::move(handler)(std::error_code(), n);
          });
        },
        token, buffers);
  }

  template <typename Buffers, typename Token>
  auto async_write_some(const Buffers& buffers, Token&& token) {
    return socket_.async_write_some(buffers, std::forward<Token>(token));
  }

 private:
  tcp::socket& socket_;
  std::string prefix_;
};

// A stream read into a buffer: what the injection relay parses heads and bodies from.
template <typename Stream>
struct Buffered {
  Stream& stream;
  std::string data;

  // False at the end of the stream (or when it broke).
  awaitable<bool> More() {
    std::vector<char> chunk(kPumpBuffer);
    try {
      size_t n = co_await stream.async_read_some(asio::buffer(chunk), use_awaitable);
      data.append(chunk.data(), n);
      co_return true;
    } catch (const std::system_error&) {
      co_return false;
    }
  }

  // The length of the head at the start, 0 at the end of the stream, -1 when it is too large.
  awaitable<long> Head() {
    for (;;) {
      // Blank lines before a request are allowed (RFC 9112 section 2.2).
      while (data.starts_with("\r\n")) data.erase(0, 2);
      size_t n = HttpHeadLength(std::string_view(data).substr(0, kMaxHttpHead));
      if (n) co_return static_cast<long>(n);
      if (data.size() >= kMaxHttpHead) co_return -1;
      if (!co_await More()) co_return 0;
    }
  }
};

template <typename Stream>
awaitable<void> WriteAll(Stream& stream, std::string_view bytes) {
  co_await asio::async_write(stream, asio::buffer(bytes.data(), bytes.size()), use_awaitable);
}

// Copies a body, as it is framed, from `from` to `to`; false when it ended early or broke.
template <typename From, typename To>
awaitable<bool> CopyBody(Buffered<From>& from, To& to, BodyFraming framing, uint64_t& count) {
  if (framing.kind == BodyFraming::kNone) co_return true;
  ChunkedScanner chunks;
  uint64_t remaining = framing.length;
  for (;;) {
    if (framing.kind == BodyFraming::kLength && remaining == 0) co_return true;
    if (from.data.empty() && !co_await from.More()) {
      co_return framing.kind == BodyFraming::kUntilClose;
    }
    size_t n = from.data.size();
    if (framing.kind == BodyFraming::kLength)
      n = static_cast<size_t>(std::min<uint64_t>(n, remaining));
    if (framing.kind == BodyFraming::kChunked) n = chunks.Feed(from.data);
    co_await WriteAll(to, std::string_view(from.data).substr(0, n));
    from.data.erase(0, n);
    count += n;
    remaining -= framing.kind == BodyFraming::kLength ? n : 0;
    if (chunks.error()) co_return false;
    if (chunks.done()) co_return true;
  }
}

// Copies one way until either side ends (an upgraded connection).
template <typename From, typename To>
awaitable<void> Copy(From& from, To& to, uint64_t& count) {
  std::vector<char> data(kPumpBuffer);
  try {
    for (;;) {
      size_t n = co_await from.async_read_some(asio::buffer(data), use_awaitable);
      co_await asio::async_write(to, asio::buffer(data.data(), n), use_awaitable);
      count += n;
    }
  } catch (const std::system_error&) {
  }
}

std::string_view StatusLine(int code) {
  switch (code) {
    case 400:
      return "400 Bad Request";
    case 403:
      return "403 Forbidden";
    case 431:
      return "431 Request Header Fields Too Large";
    default:
      return "502 Bad Gateway";
  }
}

// A refusal inside TLS: one line saying why, then the connection ends.
template <typename Stream>
awaitable<void> TlsRefuse(Stream& stream, int code, const std::string& reason) {
  std::string body = Cat("ss-net: ", reason, "\n");
  std::string response =
      Cat("HTTP/1.1 ", StatusLine(code),
          "\r\nContent-Type: text/plain; charset=utf-8\r\nContent-Length: ", body.size(),
          "\r\nConnection: close\r\n\r\n", body);
  try {
    co_await WriteAll(stream, response);
    // What the client sent and ss-net did not read is read now, until the client closes (for
    // two seconds at most): closing with unread bytes would reset the connection, and the
    // client could lose the answer.
    std::error_code ignored;
    stream.lowest_layer().shutdown(tcp::socket::shutdown_send, ignored);
    Watchdog<tcp::socket::lowest_layer_type> watchdog(stream.lowest_layer(),
                                                      std::chrono::seconds(2));
    std::vector<char> sink(4096);
    for (;;) co_await stream.async_read_some(asio::buffer(sink), use_awaitable);
  } catch (const std::system_error&) {
  }
}

// ALPN: HTTP/1.1 only, the one protocol the injection relay reads (a client offering only h2
// gets no ALPN answer and, if it insists on h2, a refusal of its first request).
int SelectHttp11(SSL*, const unsigned char** out, unsigned char* out_length,
                 const unsigned char* in, unsigned int in_length, void*) {
  static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
  unsigned char* selected = nullptr;
  if (SSL_select_next_proto(&selected, out_length, kHttp11, sizeof kHttp11, in, in_length) ==
      OPENSSL_NPN_NEGOTIATED) {
    *out = selected;
    return SSL_TLSEXT_ERR_OK;
  }
  return SSL_TLSEXT_ERR_NOACK;
}

bool HasToken(const std::optional<std::string>& value, std::string_view token) {
  if (!value) return false;
  for (const std::string& t : Split(*value, ',')) {
    if (ToLower(Trim(t)) == token) return true;
  }
  return false;
}

}  // namespace

int RaiseOpenFileLimit() {
  rlimit r{};
  if (::getrlimit(RLIMIT_NOFILE, &r) != 0) return 0;
  if (r.rlim_cur < r.rlim_max) {
    rlimit raised = r;
    raised.rlim_cur = r.rlim_max;
    if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) r = raised;
  }
  return static_cast<int>(std::min<rlim_t>(r.rlim_cur, std::numeric_limits<int>::max()));
}

int NetConnectionShare(int wanted) {
  rlimit r{};
  int room = 1;
  if (::getrlimit(RLIMIT_NOFILE, &r) == 0) {
    rlim_t limit = std::min<rlim_t>(r.rlim_cur, 1 << 24);
    room =
        std::max(1, (static_cast<int>(limit) - kReservedDescriptors) / kDescriptorsPerConnection);
  }
  return wanted > 0 ? std::min(wanted, room) : room;
}

struct NetServer::State : std::enable_shared_from_this<NetServer::State> {
  State(asio::io_context& io, NetServerOptions o)
      : io(io),
        options(std::move(o)),
        policy(options.policy_file),
        rng(std::random_device{}()),
        share(NetConnectionShare(options.max_connections)) {
    if (!options.log_file.empty() && !OpenLog()) {
      throw Error(kExitCantCreate, Cat("cannot open the log ", Quoted(options.log_file), ": ",
                                       std::strerror(errno)));
    }
  }

  bool OpenLog() {
    log_fd.Reset(open(options.log_file.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0600));
    if (!log_fd.ok()) return false;
    struct stat st {};
    log_size = fstat(log_fd.get(), &st) == 0 ? static_cast<uint64_t>(st.st_size) : 0;
    return true;
  }

  // Past its size the log becomes log_file.1 (the one before goes) and a new one starts. When it
  // cannot be renamed it is emptied instead: the host's disk is never the sandbox's to fill.
  void RotateLog() {
    std::string old = options.log_file + ".1";
    if (rename(options.log_file.c_str(), old.c_str()) == 0 && OpenLog()) return;
    std::cerr << "ss-net: warning: cannot rotate the log " << Quoted(options.log_file) << " to "
              << Quoted(old) << ": " << std::strerror(errno) << "; emptying it instead\n";
    if (!log_fd.ok()) OpenLog();
    if (log_fd.ok() && ftruncate(log_fd.get(), 0) == 0) log_size = 0;
  }

  asio::io_context& io;
  NetServerOptions options;
  PolicyFile policy;
  HostNetworksWatch host_networks;
  Fd log_fd;
  uint64_t log_size = 0;
  std::mt19937 rng;
  std::deque<std::string> denials;  // the recent ones, one line each
  std::vector<tcp::acceptor> proxy, transparent, dns_tcp;
  std::vector<udp::socket> dns_udp;
  // Connections and lookups being served, and how many may be.
  int serving = 0;
  const int share;
  // Refusals not yet logged: at most one line a second says how many there were.
  int refused = 0;
  std::chrono::steady_clock::time_point refusal_logged{};
  // Accept failures, likewise.
  int accept_failures = 0;
  std::chrono::steady_clock::time_point accept_failure_logged{};

  // Takes one of the sandbox's share, or refuses (logged, at most a line a second).
  bool TakeShare(std::string_view kind) {
    if (serving < share) {
      ++serving;
      return true;
    }
    ++refused;
    auto now = std::chrono::steady_clock::now();
    if (now - refusal_logged >= std::chrono::seconds(1)) {
      Log({{"kind", kind},
           {"verdict", "deny"},
           {"destination", ""},
           {"refused", refused},
           {"reason", Cat("sandbox ", Quoted(options.sandbox), " is over its share of ", share,
                          " connections and lookups at once (", refused,
                          " refused since the last line); close some, or raise "
                          "network.connections")}});
      refused = 0;
      refusal_logged = now;
    }
    return false;
  }

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
    ssize_t n = write(log_fd.get(), line.data(), line.size());
    if (n > 0) log_size += static_cast<uint64_t>(n);
    if (log_size >= options.log_max_bytes) RotateLog();
  }

  // The sentence a denied client reads, naming the rule and the command that allows it.
  std::string DenyReason(std::string_view destination, int port, const NetVerdict& v,
                         std::string_view address = "") const {
    std::string what = port ? Cat(destination, ":", port) : std::string(destination);
    std::string name = std::string(destination);
    // Where it leads: the address connected to, and the IPv4 address inside it that decided.
    std::string to = std::string(address);
    if (!v.address.empty() && v.address != to)
      to = to.empty() ? v.address : Cat(to, " (", v.address, ")");
    std::string leads = to == destination ? Cat(what, " is ") : Cat(what, " leads to ", to, ", ");
    if (v.rule == "internal address") {
      return Cat(leads, "an address on the host or its network, which sandbox ",
                 Quoted(options.sandbox), " may not reach; to allow it: ss net allow ",
                 v.address.empty() ? std::string(address) : v.address);
    }
    if (v.rule == "host address") {
      return Cat(leads, "an address of the host itself, which no sandbox may reach, whatever ",
                 "its rules or mode");
    }
    if (v.rule == "sandbox network") {
      return Cat(leads, "on ", v.network, ", a network of the host's sandboxes and containers, ",
                 "which no sandbox may reach, whatever its rules or mode");
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
      for (const IpAddress& a : DnsAddresses(answer)) out.push_back(a);
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
      // The host as it is now: an address added a moment ago counts.
      NetVerdict v = DecideAddress(policy, a, port, host_networks.Current());
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

  // Copies from one side to the other until end of stream, inside the kernel (splice(2) through a
  // pipe: the bytes are never copied into ss-net). The pipe is held only while bytes flow: an idle
  // tunnel waits for readability with nothing but its two sockets (200 open tunnels cost little).
  static awaitable<void> Pump(tcp::socket& from, tcp::socket& to, uint64_t& count) {
    auto fail = [&](bool eof) {
      std::error_code ignored;
      if (eof) {
        to.shutdown(tcp::socket::shutdown_send, ignored);
      } else {
        from.close(ignored);
        to.close(ignored);
      }
    };
    try {
      from.native_non_blocking(true);
      to.native_non_blocking(true);
      for (;;) {
        co_await from.async_wait(tcp::socket::wait_read, use_awaitable);
        int ends[2];
        if (platform::Pipe(ends, /*nonblock=*/true) != 0) co_return fail(false);
        Fd out(ends[0]), in(ends[1]);
        for (;;) {
          ssize_t n = ::splice(from.native_handle(), nullptr, in.get(), nullptr, kSpliceChunk,
                               SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
          if (n == 0) co_return fail(true);
          if (n < 0) {
            if (errno == EAGAIN || errno == EINTR) break;
            co_return fail(false);
          }
          for (size_t left = static_cast<size_t>(n); left > 0;) {
            ssize_t m = ::splice(out.get(), nullptr, to.native_handle(), nullptr, left,
                                 SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
            if (m < 0 && (errno == EAGAIN || errno == EINTR)) {
              co_await to.async_wait(tcp::socket::wait_write, use_awaitable);
              continue;
            }
            if (m <= 0) co_return fail(false);
            left -= static_cast<size_t>(m);
            count += static_cast<uint64_t>(m);
          }
        }
      }
    } catch (const std::system_error&) {
      fail(false);
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

  // Decides and connects; a denial or a failure is logged and answered by `refuse` instead.
  template <typename Refuse>
  awaitable<std::optional<tcp::socket>> Open(nlohmann::json& event, const std::string& host,
                                             int port, Refuse refuse) {
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
      co_return std::nullopt;
    }
    event["rule"] = v.rule;
    if (!up.socket) {
      event["verdict"] = "fail";
      event["reason"] = up.error;
      Log(event);
      co_await refuse(502, up.error);
      co_return std::nullopt;
    }
    event["verdict"] = "allow";
    event["address"] = up.address;
    co_return std::move(up.socket);
  }

  // Decides, connects, and splices; a denial or a failure is answered by `refuse` instead.
  // `initial` is sent upstream first. `established` (a CONNECT's answer) is sent to the client
  // once connected; what the client sends first then is checked by CheckTunnelStart. A request
  // with `host_problem` (HostHeaderProblem) is refused when its destination is allowed, before
  // anything is sent there.
  template <typename Refuse>
  awaitable<void> Pass(tcp::socket& client, nlohmann::json event, const std::string& host, int port,
                       std::string initial, std::string established, Refuse refuse,
                       std::string host_problem = std::string()) {
    std::optional<tcp::socket> upstream = co_await Open(event, host, port, refuse);
    if (!upstream) co_return;
    if (!host_problem.empty()) {
      event.update({{"verdict", "deny"}, {"rule", "host"}, {"reason", host_problem}});
      Log(event);
      std::error_code ignored;
      upstream->close(ignored);
      co_await refuse(403, host_problem);
      co_return;
    }
    uint64_t out = 0, in = 0;
    bool denied = false;
    try {
      if (!established.empty()) {
        co_await asio::async_write(client, asio::buffer(established), use_awaitable);
        // The server may speak first (SSH, SMTP): its bytes flow while the client's first ones
        // are awaited and checked.
        using namespace asio::experimental::awaitable_operators;
        co_await (Pump(*upstream, client, in) && CheckTunnelStart(client, *upstream, event, host,
                                                                  std::move(initial), out, denied));
      } else {
        if (!initial.empty()) {
          co_await asio::async_write(*upstream, asio::buffer(initial), use_awaitable);
          out += initial.size();
        }
        co_await Splice(client, *upstream, out, in);
      }
    } catch (const std::system_error&) {
    }
    if (denied) co_return;
    event["bytes_out"] = out;
    event["bytes_in"] = in;
    Log(event);
  }

  // A CONNECT tunnel's client side: its first bytes (`initial`, those read with the CONNECT, and
  // more), when they start a TLS ClientHello, are read whole (within the head timeout) and its
  // server name must be the CONNECT host (TunnelHelloProblem); otherwise the tunnel is closed
  // before any of them goes upstream, and the denial logged. Then the client's bytes are pumped.
  awaitable<void> CheckTunnelStart(tcp::socket& client, tcp::socket& upstream,
                                   const nlohmann::json& event, const std::string& host,
                                   std::string initial, uint64_t& out, bool& denied) {
    std::string bytes = std::move(initial);
    std::vector<char> data(4096);
    try {
      if (bytes.empty()) {
        size_t n = co_await client.async_read_some(asio::buffer(data), use_awaitable);
        bytes.append(data.data(), n);
      }
    } catch (const std::system_error&) {
      std::error_code ignored;
      upstream.shutdown(tcp::socket::shutdown_send, ignored);
      co_return;
    }
    ClientHello hello;
    hello.status = ClientHello::kNotTls;
    if (static_cast<uint8_t>(bytes[0]) == 22) {
      auto complete = [&](const std::string& b) {
        hello = ParseClientHello(b);
        return hello.status != ClientHello::kNeedMore;
      };
      if (!co_await ReadStart(client, bytes, kMaxClientHello, complete)) {
        hello.status = ClientHello::kNeedMore;
      }
    }
    std::string why = TunnelHelloProblem(hello, host);
    if (!why.empty()) {
      nlohmann::json e = event;
      e["verdict"] = "deny";
      e["rule"] = "sni";
      if (!hello.sni.empty()) e["sni"] = hello.sni;
      e["reason"] = why;
      Log(e);
      denied = true;
      std::error_code ignored;
      client.set_option(asio::socket_base::linger(true, 0), ignored);
      client.close(ignored);
      upstream.close(ignored);
      co_return;
    }
    try {
      co_await asio::async_write(upstream, asio::buffer(bytes), use_awaitable);
      out += bytes.size();
    } catch (const std::system_error&) {
      std::error_code ignored;
      client.close(ignored);
      upstream.close(ignored);
      co_return;
    }
    co_await Pump(client, upstream, out);
  }

  // A placeholder on its way out in clear (plain HTTP): refused wherever it goes, since the real
  // value is put in only over TLS to the hosts declared for it. True when refused.
  template <typename Refuse>
  awaitable<bool> RefusePlaceholder(std::string_view head, nlohmann::json event,
                                    const std::string& host, int port, Refuse refuse) {
    const NetPolicy& current = policy.Current();
    const NetInjection* i = FindPlaceholder(current, head);
    if (!i) co_return false;
    std::string reason =
        Cat("the placeholder of secret ", i->secret, " is sent to ", host,
            " in plain HTTP; it is replaced only over HTTPS to ", Join(i->hosts, ", "));
    event["destination"] = host;
    event["port"] = port;
    event["verdict"] = "deny";
    event["rule"] = "placeholder";
    event["secret"] = i->secret;
    event["reason"] = reason;
    Log(event);
    co_await refuse(403, reason);
    co_return true;
  }

  // ----- credential injection -----

  std::optional<NetCa> ca;
  SecretReader secrets;
  std::unique_ptr<asio::ssl::context> upstream_tls;
  std::map<std::string,
           std::pair<std::shared_ptr<const NetLeaf>, std::shared_ptr<asio::ssl::context>>>
      leaf_tls;

  // The TLS context that presents `host`'s leaf, or nullptr with `why` set.
  std::shared_ptr<asio::ssl::context> ServerTls(const std::string& host, std::string& why) {
    try {
      if (!ca) ca.emplace(NetCa::LoadOrCreate(options.ca_dir));
      auto leaf = ca->LeafFor(host);
      auto& slot = leaf_tls[host];
      if (slot.first != leaf) {
        auto context = std::make_shared<asio::ssl::context>(asio::ssl::context::tls_server);
        SSL_CTX* c = context->native_handle();
        SSL_CTX_set_min_proto_version(c, TLS1_2_VERSION);
        if (SSL_CTX_use_certificate(c, leaf->cert.get()) != 1 ||
            SSL_CTX_use_PrivateKey(c, leaf->key.get()) != 1 ||
            SSL_CTX_add1_chain_cert(c, ca->cert()) != 1) {
          why = Cat("cannot present a certificate for ", host);
          return nullptr;
        }
        SSL_CTX_set_alpn_select_cb(c, SelectHttp11, nullptr);
        slot = {leaf, context};
      }
      return slot.second;
    } catch (const Error& e) {
      why = Cat("cannot present a certificate for ", host, ": ", e.what());
      return nullptr;
    }
  }

  // Upstream: the host's certificate is verified against the host's trusted roots (OpenSSL's
  // default paths; SSL_CERT_FILE and SSL_CERT_DIR count), and its name checked.
  asio::ssl::context& UpstreamTls() {
    if (!upstream_tls) {
      upstream_tls = std::make_unique<asio::ssl::context>(asio::ssl::context::tls_client);
      upstream_tls->set_default_verify_paths();
      upstream_tls->set_verify_mode(asio::ssl::verify_peer);
      SSL_CTX_set_min_proto_version(upstream_tls->native_handle(), TLS1_2_VERSION);
    }
    return *upstream_tls;
  }

  // A connection to a host a secret is injected for: decided like any other, then TLS is
  // terminated on both sides and every request is checked and injected; never a tunnel.
  // `connect`: the client asked with CONNECT and hears of a failure before TLS starts; else it is
  // a transparent connection whose ClientHello, already read, is `prefix`.
  awaitable<void> Intercept(tcp::socket& client, nlohmann::json event, const std::string& host,
                            int port, std::string prefix, bool connect) {
    auto refuse = [&](int code, std::string reason) -> awaitable<void> {
      if (connect) {
        co_await Refuse(client, code, reason);
      } else {
        std::error_code ignored;
        client.set_option(asio::socket_base::linger(true, 0), ignored);
        client.close(ignored);
      }
    };
    event["inject"] = true;
    std::optional<tcp::socket> socket = co_await Open(event, host, port, refuse);
    if (!socket) co_return;
    std::string why;
    std::shared_ptr<asio::ssl::context> server_tls = ServerTls(host, why);
    asio::ssl::stream<tcp::socket> upstream(std::move(*socket), UpstreamTls());
    if (server_tls) {
      SSL* ssl = upstream.native_handle();
      static const unsigned char kHttp11[] = {8, 'h', 't', 't', 'p', '/', '1', '.', '1'};
      SSL_set_tlsext_host_name(ssl, host.c_str());
      SSL_set1_host(ssl, host.c_str());
      SSL_set_alpn_protos(ssl, kHttp11, sizeof kHttp11);
      try {
        Watchdog<tcp::socket> watchdog(upstream.next_layer(), options.connect_timeout);
        co_await upstream.async_handshake(asio::ssl::stream_base::client, use_awaitable);
      } catch (const std::system_error& e) {
        long verify = SSL_get_verify_result(ssl);
        why = verify != X509_V_OK
                  ? Cat("the certificate of ", host,
                        " is not trusted: ", X509_verify_cert_error_string(verify))
                  : Cat("TLS with ", host, " failed: ",
                        e.code() == asio::error::operation_aborted ? std::string("timed out")
                                                                   : e.code().message());
      }
    }
    if (!why.empty()) {
      event["verdict"] = "fail";
      event["reason"] = why;
      Log(event);
      if (connect || !server_tls) {
        co_await refuse(502, why);
        co_return;
      }
    }
    std::string established = "HTTP/1.1 200 Connection established\r\n\r\n";
    if (connect) {
      try {
        co_await WriteAll(client, established);
      } catch (const std::system_error&) {
        co_return;
      }
    }
    PrefixedSocket prefixed(client, std::move(prefix));
    asio::ssl::stream<PrefixedSocket&> tls(prefixed, *server_tls);
    try {
      Watchdog<tcp::socket> watchdog(client, options.head_timeout);
      co_await tls.async_handshake(asio::ssl::stream_base::server, use_awaitable);
    } catch (const std::system_error&) {
      if (why.empty()) {
        event["verdict"] = "fail";
        event["reason"] = Cat("the client did not complete TLS with ss-net's certificate for ",
                              host, " (does it trust the ss-net CA?)");
        Log(event);
      }
      co_return;
    }
    if (!why.empty()) {
      co_await TlsRefuse(tls, 502, why);
      co_return;
    }
    // The name the client asked TLS for is the one decided on.
    const char* sni = SSL_get_servername(tls.native_handle(), TLSEXT_NAMETYPE_host_name);
    if (sni && NormaliseHostName(sni) != host) {
      std::string reason = Cat("the TLS server name ", Quoted(sni), " is not ", host);
      event["verdict"] = "deny";
      event["rule"] = "sni";
      event["reason"] = reason;
      Log(event);
      co_await TlsRefuse(tls, 403, reason);
      co_return;
    }
    co_await Relay(tls, upstream, host, event);
  }

  // HTTP/1.1 requests from the client, injected, and their responses, until either side ends.
  template <typename Client, typename Up>
  awaitable<void> Relay(Client& client, Up& upstream, const std::string& host,
                        nlohmann::json event) {
    Buffered<Client> in{client, {}};
    Buffered<Up> out{upstream, {}};
    uint64_t sent = 0, received = 0;
    int requests = 0;
    std::vector<std::string> injected;
    SecretLookup lookup = [this](const NetInjection& i, std::string* why) {
      return secrets.Read(i.from, why);
    };
    // A refusal of one request: logged (its own line), answered, and the connection ends.
    auto refuse = [&](int code, std::string reason, std::string secret,
                      bool failed) -> awaitable<void> {
      nlohmann::json e = event;
      e["verdict"] = failed ? "fail" : "deny";
      e["rule"] = "inject";
      e["reason"] = reason;
      if (!secret.empty()) e["secret"] = secret;
      Log(e);
      co_await TlsRefuse(client, code, reason);
    };
    try {
      for (;;) {
        long n = co_await in.Head();
        if (n == 0) break;
        if (n < 0) {
          std::string reason = Cat("the request head is larger than ", kMaxHttpHead, " bytes");
          co_await refuse(431, reason, std::string(), false);
          break;
        }
        auto head = ParseHttpHead(in.data);
        if (!head) {
          std::string reason =
              "not an HTTP/1.1 request (ss-net injects secrets into HTTP/1.1 only)";
          co_await refuse(400, reason, std::string(), false);
          break;
        }
        auto framing = RequestFraming(*head);
        if (!framing) {
          std::string reason = "the request's body length is ambiguous";
          co_await refuse(400, reason, std::string(), false);
          break;
        }
        InjectedHead ready = InjectSecrets(*head, host, policy.Current(), lookup);
        if (ready.status != InjectedHead::kOk) {
          co_await refuse(ready.code, ready.reason, ready.secret,
                          ready.status == InjectedHead::kFailed);
          break;
        }
        in.data.erase(0, head->size);
        ++requests;
        for (const std::string& name : ready.injected) {
          if (std::find(injected.begin(), injected.end(), name) == injected.end()) {
            injected.push_back(name);
          }
        }
        co_await WriteAll(upstream, ready.head);
        sent += ready.head.size();
        OPENSSL_cleanse(ready.head.data(), ready.head.size());
        if (!co_await CopyBody(in, upstream, *framing, sent)) break;
        // The response, and any interim (1xx) responses before it, unchanged.
        bool end = !head->version.ends_with("1.1") || HasToken(head->Header("Connection"), "close");
        bool upgraded = false;
        for (;;) {
          long m = co_await out.Head();
          auto response = m > 0 ? ParseHttpResponseHead(out.data) : std::nullopt;
          if (!response) {
            end = true;
            break;
          }
          std::string raw = out.data.substr(0, response->size);
          out.data.erase(0, response->size);
          co_await WriteAll(client, raw);
          received += raw.size();
          if (response->status == 101) {
            upgraded = true;
            break;
          }
          if (response->status < 200) continue;
          auto body = ResponseFraming(*response, head->method);
          if (!body || !co_await CopyBody(out, client, *body, received) ||
              body->kind == BodyFraming::kUntilClose ||
              HasToken(response->Header("Connection"), "close")) {
            end = true;
          }
          break;
        }
        if (upgraded) {
          // A WebSocket (or other) upgrade: what follows is no longer HTTP; it is copied as is.
          co_await WriteAll(client, out.data);
          co_await WriteAll(upstream, in.data);
          using namespace asio::experimental::awaitable_operators;
          co_await (Copy(client, upstream, sent) || Copy(upstream, client, received));
          break;
        }
        if (end) break;
      }
    } catch (const std::system_error&) {
    }
    event["requests"] = requests;
    if (!injected.empty()) event["injected"] = injected;
    event["bytes_out"] = sent;
    event["bytes_in"] = received;
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
      auto name = NormaliseHostName(hp->host);
      if (name && !ParseIpAddress(*name) && !InjectionsFor(policy.Current(), *name).empty()) {
        co_await Intercept(client, event, *name, hp->port, rest, true);
        co_return;
      }
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
    if (co_await RefusePlaceholder(bytes.substr(0, head->size), event, url->authority.host,
                                   url->authority.port, refuse)) {
      co_return;
    }
    std::string forwarded = ForwardedHead(*head, url->path) + rest;
    co_await Pass(client, event, url->authority.host, url->authority.port, forwarded, std::string(),
                  refuse, HostHeaderProblem(*head, url->authority.host));
  }

  // ----- transparent interception -----

  static std::optional<tcp::endpoint> OriginalDestination(tcp::socket& client) {
    auto local = client.local_endpoint().address();
    auto original = platform::OriginalDestination(client.native_handle(),
                                                  local.is_v6() && !local.to_v6().is_v4_mapped());
    if (!original) return std::nullopt;
    const sockaddr_storage& ss = *original;
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
      auto name = NormaliseHostName(hello.sni);
      if (name && !InjectionsFor(policy.Current(), *name).empty()) {
        co_await Intercept(client, event, *name, port, bytes, false);
        co_return;
      }
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
    if (co_await RefusePlaceholder(bytes.substr(0, head->size), event, hp->host, port, refuse)) {
      co_return;
    }
    // The port is where the sandbox connected; the Host header names only the server.
    co_await Pass(client, event, hp->host, port,
                  ForwardedHead(*head, head->target) + bytes.substr(head->size), std::string(),
                  refuse, HostHeaderProblem(*head, hp->host));
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
    // Answers are kept by the sandbox's resolver for a second at most: a name the policy stops
    // allowing stops resolving at once.
    if (answer.empty() || !DnsAnswers(answer, upstream_query, *uq) || !CapDnsTtls(answer, 1)) {
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
      // A lookup holds a descriptor of its own while it asks upstream: it counts in the share.
      if (!TakeShare("dns")) continue;
      asio::co_spawn(
          io,
          [self = shared_from_this(), &socket, from,
           query = std::string(data.data(), n)]() -> awaitable<void> {
            struct Release {
              State* state;
              ~Release() { --state->serving; }
            } release{self.get()};
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
  awaitable<void> Accept(tcp::acceptor& acceptor, Serve serve, std::string_view kind) {
    auto backoff = kAcceptBackoffFirst;
    asio::steady_timer pause(io);
    for (;;) {
      std::error_code ec;
      tcp::socket client = co_await acceptor.async_accept(asio::redirect_error(use_awaitable, ec));
      if (ec == asio::error::operation_aborted || !acceptor.is_open()) co_return;
      if (ec) {
        // Out of descriptors or buffers (EMFILE, ENFILE, ENOBUFS, ENOMEM): the pending
        // connection stays queued and the listener stays readable, so an immediate retry would
        // fail again at once. Wait, longer each time, until one goes through.
        ++accept_failures;
        auto now = std::chrono::steady_clock::now();
        if (now - accept_failure_logged >= std::chrono::seconds(1)) {
          Log({{"kind", kind},
               {"verdict", "error"},
               {"failures", accept_failures},
               {"reason", Cat("cannot take a connection: ", ec.message(), "; waiting ",
                              backoff.count(), " ms before the next try")}});
          accept_failures = 0;
          accept_failure_logged = now;
        }
        pause.expires_after(backoff);
        co_await pause.async_wait(asio::redirect_error(use_awaitable, ec));
        backoff = std::min(backoff * 2, kAcceptBackoffLast);
        continue;
      }
      backoff = kAcceptBackoffFirst;
      if (!TakeShare(kind)) {
        client.close(ec);
        continue;
      }
      asio::co_spawn(io, (this->*serve)(std::move(client)),
                     [keep = shared_from_this()](std::exception_ptr) { --keep->serving; });
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
      // The TCP side on the same port as the UDP side; when the port is chosen (0), the one
      // the UDP side got may be taken for TCP: another is tried then.
      for (int attempt = 0;; ++attempt) {
        udp::socket socket(io);
        std::error_code ec;
        socket.open(at.protocol(), ec);
        if (!ec && at.address().is_v4()) socket.set_option(FreeBind(true), ec);
        if (!ec) socket.bind(at, ec);
        if (ec) {
          throw Error(kExitUnavailable, Cat("cannot listen for DNS on ", at.address().to_string(),
                                            " port ", at.port(), ": ", ec.message()));
        }
        try {
          dns_tcp.push_back(
              Listen(tcp::endpoint(at.address(), socket.local_endpoint().port()), "DNS over TCP"));
        } catch (const Error&) {
          if (at.port() != 0 || attempt == 9) throw;
          continue;
        }
        dns_udp.push_back(std::move(socket));
        break;
      }
    }
    auto self = shared_from_this();
    for (auto& a : proxy) {
      asio::co_spawn(io, Accept(a, &State::ServeProxy, "proxy"), asio::detached);
    }
    for (auto& a : transparent) {
      asio::co_spawn(io, Accept(a, &State::ServeTransparent, "transparent"), asio::detached);
    }
    for (auto& a : dns_tcp) {
      asio::co_spawn(io, Accept(a, &State::ServeDnsTcp, "dns"), asio::detached);
    }
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
