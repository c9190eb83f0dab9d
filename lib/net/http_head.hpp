// The head of an HTTP/1.x request, as ss-net's proxy reads it: the request line and the headers,
// nothing of the body. Pure parsing; every malformed head is refused rather than guessed at.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ss {

inline constexpr size_t kMaxHttpHead = 16 * 1024;

using HttpHeaders = std::vector<std::pair<std::string, std::string>>;  // in order, values trimmed

// Appends the header lines of a head's `text` (its final CRLF CRLF left out) after the start line
// that ends at `line_end`; false for a line that is not "name: value" (a token for a name, no
// obsolete folding, no bare CR or LF).
bool ParseHeaderLines(std::string_view text, size_t line_end, HttpHeaders& headers);

// The first value of header `name` (any case), or nothing.
std::optional<std::string> FindHeader(const HttpHeaders& headers, std::string_view name);

struct HttpHead {
  std::string method;   // "CONNECT", "GET", …
  std::string target;   // "host:443", "http://host/path", "/path"
  std::string version;  // "HTTP/1.1"
  HttpHeaders headers;
  size_t size = 0;  // bytes of the head, the blank line included

  // The first value of header `name` (any case), or nothing.
  std::optional<std::string> Header(std::string_view name) const;
};

// The length of the head at the start of `bytes` ("\r\n\r\n" included), or 0 while incomplete.
size_t HttpHeadLength(std::string_view bytes);

// Parses a complete head (`bytes` holds at least HttpHeadLength(bytes) bytes); nothing when it is
// not a well-formed HTTP/1.0 or 1.1 request head.
std::optional<HttpHead> ParseHttpHead(std::string_view bytes);

struct HostPort {
  std::string host;  // a name, an IPv4 address, or an IPv6 address without its brackets
  int port = 0;
};

// "host", "host:port", "[v6]", "[v6]:port"; `default_port` when none is given (0: one is
// required). Nothing for anything else.
std::optional<HostPort> ParseHostPort(std::string_view text, int default_port);

// Whether two host names are the same: in any case, a trailing dot ignored.
bool SameHostName(std::string_view a, std::string_view b);

// Why a request for `host` (decided on) may not go on with the Host headers it has, or "" when
// it may: a server behind `host` may serve other names too and routes by the Host header, so
// there is at most one, and it names `host` (its port is not compared).
std::string HostHeaderProblem(const HttpHead& head, std::string_view host);

// "http://host[:port]/path?query" → its host and port, and the origin-form path ("/path?query").
struct HttpUrl {
  HostPort authority;
  std::string path;
};
std::optional<HttpUrl> ParseHttpUrl(std::string_view url);

// The head again, with the request target replaced and hop-by-hop proxy headers (Proxy-*,
// Connection, Keep-Alive) replaced by "Connection: close" ("Connection: Upgrade" for a request
// that asks for an upgrade): what a forward proxy sends upstream.
std::string ForwardedHead(const HttpHead& head, std::string_view target);

}  // namespace ss
