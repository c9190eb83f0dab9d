#include "http_head.hpp"

#include "strings.hpp"

namespace ss {

std::optional<std::string> HttpHead::Header(std::string_view name) const {
  return FindHeader(headers, name);
}

size_t HttpHeadLength(std::string_view bytes) {
  size_t end = bytes.find("\r\n\r\n");
  return end == std::string_view::npos ? 0 : end + 4;
}

namespace {

constexpr std::string_view kTokenChars =
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

bool Visible(std::string_view s) {
  for (char c : s) {
    auto u = static_cast<unsigned char>(c);
    if (u < 0x21 || u == 0x7f) return false;
  }
  return true;
}

}  // namespace

bool ParseHeaderLines(std::string_view text, size_t line_end, HttpHeaders& headers) {
  while (line_end != std::string_view::npos) {
    size_t start = line_end + 2;
    line_end = text.find("\r\n", start);
    std::string_view line = text.substr(
        start, line_end == std::string_view::npos ? std::string_view::npos : line_end - start);
    size_t colon = line.find(':');
    // No obsolete line folding, no bare CR or LF, a token for a name.
    if (colon == 0 || colon == std::string_view::npos ||
        !OnlyChars(line.substr(0, colon), kTokenChars) ||
        line.find_first_of("\r\n") != std::string_view::npos) {
      return false;
    }
    headers.emplace_back(std::string(line.substr(0, colon)),
                         std::string(Trim(line.substr(colon + 1))));
  }
  return true;
}

std::optional<std::string> FindHeader(const HttpHeaders& headers, std::string_view name) {
  std::string want = ToLower(name);
  for (const auto& [key, value] : headers) {
    if (ToLower(key) == want) return value;
  }
  return std::nullopt;
}

std::optional<HttpHead> ParseHttpHead(std::string_view bytes) {
  size_t length = HttpHeadLength(bytes);
  if (length == 0 || length > kMaxHttpHead) return std::nullopt;
  std::string_view text = bytes.substr(0, length - 4);
  HttpHead head;
  head.size = length;
  size_t line_end = text.find("\r\n");
  std::string_view line = text.substr(0, line_end);
  std::vector<std::string> words = Split(line, ' ');
  if (words.size() != 3 || words[0].empty() || !OnlyChars(words[0], kTokenChars) ||
      words[1].empty() || !Visible(words[1]) ||
      (words[2] != "HTTP/1.1" && words[2] != "HTTP/1.0")) {
    return std::nullopt;
  }
  head.method = words[0];
  head.target = words[1];
  head.version = words[2];
  if (!ParseHeaderLines(text, line_end, head.headers)) return std::nullopt;
  return head;
}

std::optional<HostPort> ParseHostPort(std::string_view text, int default_port) {
  HostPort hp;
  std::string_view port_text;
  if (text.starts_with("[")) {
    size_t close = text.find(']');
    if (close == std::string_view::npos) return std::nullopt;
    hp.host = std::string(text.substr(1, close - 1));
    std::string_view after = text.substr(close + 1);
    if (!after.empty()) {
      if (!after.starts_with(":")) return std::nullopt;
      port_text = after.substr(1);
      if (port_text.empty()) return std::nullopt;
    }
  } else {
    size_t colon = text.find(':');
    hp.host = std::string(text.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = text.substr(colon + 1);
      if (port_text.empty()) return std::nullopt;
    }
  }
  if (hp.host.empty()) return std::nullopt;
  if (port_text.empty()) {
    if (default_port == 0) return std::nullopt;
    hp.port = default_port;
  } else {
    auto port = ParseDecimal(port_text);
    if (!port || *port < 1 || *port > 65535) return std::nullopt;
    hp.port = static_cast<int>(*port);
  }
  return hp;
}

std::optional<HttpUrl> ParseHttpUrl(std::string_view url) {
  constexpr std::string_view kScheme = "http://";
  if (url.size() < kScheme.size() || ToLower(url.substr(0, kScheme.size())) != kScheme) {
    return std::nullopt;
  }
  url.remove_prefix(kScheme.size());
  size_t path = url.find_first_of("/?#");
  std::string_view authority = url.substr(0, path);
  if (authority.find('@') != std::string_view::npos) return std::nullopt;  // no userinfo
  auto hp = ParseHostPort(authority, 80);
  if (!hp) return std::nullopt;
  HttpUrl u{*hp, path == std::string_view::npos ? "/" : std::string(url.substr(path))};
  if (u.path.starts_with("?")) u.path.insert(0, "/");
  if (u.path.starts_with("#")) u.path = "/";
  return u;
}

bool SameHostName(std::string_view a, std::string_view b) {
  if (a.ends_with('.')) a.remove_suffix(1);
  if (b.ends_with('.')) b.remove_suffix(1);
  return ToLower(a) == ToLower(b);
}

std::string HostHeaderProblem(const HttpHead& head, std::string_view host) {
  int seen = 0;
  for (const auto& [key, value] : head.headers) {
    if (ToLower(key) != "host") continue;
    if (++seen > 1) return Cat("the request has more than one Host header (it is for ", host, ")");
    auto named = ParseHostPort(value, 80);
    if (!named) return Cat("the Host header ", Quoted(value), " is not a host[:port]");
    if (!SameHostName(named->host, host)) {
      return Cat("the Host header ", Quoted(value), " does not name ", host,
                 ", the host the request is for");
    }
  }
  return std::string();
}

std::string ForwardedHead(const HttpHead& head, std::string_view target) {
  std::string out = Cat(head.method, " ", target, " ", head.version, "\r\n");
  for (const auto& [key, value] : head.headers) {
    std::string lower = ToLower(key);
    if (lower.starts_with("proxy-") || lower == "connection" || lower == "keep-alive") continue;
    out += Cat(key, ": ", value, "\r\n");
  }
  // A WebSocket (or other) upgrade keeps its Connection header; everything else ends with the
  // response, so one connection carries one request to the host that was decided on.
  out += head.Header("Upgrade") ? "Connection: Upgrade\r\n\r\n" : "Connection: close\r\n\r\n";
  return out;
}

}  // namespace ss
