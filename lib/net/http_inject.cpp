#include "http_inject.hpp"

#include <algorithm>

#include "strings.hpp"

namespace ss {
namespace {

// A header value as RFC 9110 allows it: no control characters but the horizontal tab (a CR or
// LF would start another header upstream, a NUL ends it early for some servers).
bool CleanValue(std::string_view v) {
  return std::none_of(v.begin(), v.end(), [](char c) {
    auto u = static_cast<unsigned char>(c);
    return (u < 0x20 && u != '\t') || u == 0x7f;
  });
}

std::optional<uint64_t> ParseLength(std::string_view text) {
  if (text.empty() || text.size() > 18 || !OnlyChars(text, "0123456789")) return std::nullopt;
  uint64_t n = 0;
  for (char c : text) n = n * 10 + static_cast<uint64_t>(c - '0');
  return n;
}

template <typename Headers>
std::optional<BodyFraming> Framing(const Headers& headers, bool request) {
  std::optional<uint64_t> length;
  bool chunked = false, other_coding = false, transfer_encoding = false;
  for (const auto& [key, value] : headers) {
    std::string lower = ToLower(key);
    if (lower == "content-length") {
      auto n = ParseLength(value);
      if (!n || (length && *length != *n)) return std::nullopt;
      length = n;
    } else if (lower == "transfer-encoding") {
      transfer_encoding = true;
      for (const std::string& coding : Split(value, ',')) {
        std::string c = ToLower(Trim(coding));
        if (c.empty()) continue;
        if (chunked) return std::nullopt;  // chunked must be the last coding
        if (c == "chunked") {
          chunked = true;
        } else {
          other_coding = true;
        }
      }
    }
  }
  if (transfer_encoding) {
    if (length) return std::nullopt;
    if (chunked) return BodyFraming{BodyFraming::kChunked, 0};
    // A request whose length cannot be known is refused; a response runs until close.
    if (request || !other_coding) return std::nullopt;
    return BodyFraming{BodyFraming::kUntilClose, 0};
  }
  if (length) return BodyFraming{BodyFraming::kLength, *length};
  return BodyFraming{request ? BodyFraming::kNone : BodyFraming::kUntilClose, 0};
}

}  // namespace

std::optional<std::string> HttpResponseHead::Header(std::string_view name) const {
  return FindHeader(headers, name);
}

std::optional<HttpResponseHead> ParseHttpResponseHead(std::string_view bytes) {
  size_t length = HttpHeadLength(bytes);
  if (length == 0 || length > kMaxHttpHead) return std::nullopt;
  std::string_view text = bytes.substr(0, length - 4);
  HttpResponseHead head;
  head.size = length;
  size_t line_end = text.find("\r\n");
  std::string_view line = text.substr(0, line_end);
  // "HTTP/1.1 200 OK": the version, three digits, and a reason that may be empty.
  if (line.size() < 12 || (!line.starts_with("HTTP/1.1 ") && !line.starts_with("HTTP/1.0 ")) ||
      !OnlyChars(line.substr(9, 3), "0123456789") || (line.size() > 12 && line[12] != ' ')) {
    return std::nullopt;
  }
  head.version = std::string(line.substr(0, 8));
  head.status = std::stoi(std::string(line.substr(9, 3)));
  if (!ParseHeaderLines(text, line_end, head.headers)) return std::nullopt;
  return head;
}

std::optional<BodyFraming> RequestFraming(const HttpHead& head) {
  return Framing(head.headers, true);
}

std::optional<BodyFraming> ResponseFraming(const HttpResponseHead& head, std::string_view method) {
  if (method == "HEAD" || (head.status >= 100 && head.status < 200) || head.status == 204 ||
      head.status == 304) {
    return BodyFraming{BodyFraming::kNone, 0};
  }
  if (method == "CONNECT" && head.status >= 200 && head.status < 300) return std::nullopt;
  return Framing(head.headers, false);
}

size_t ChunkedScanner::Feed(std::string_view bytes) {
  size_t i = 0;
  auto hex = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  while (i < bytes.size() && state_ != kDone && state_ != kError) {
    char c = bytes[i];
    switch (state_) {
      case kSize:
        if (hex(c) >= 0) {
          if (++size_digits_ > 15) {
            state_ = kError;
            break;
          }
          remaining_ = remaining_ * 16 + static_cast<uint64_t>(hex(c));
          ++i;
        } else if (size_digits_ > 0 && (c == ';' || c == ' ' || c == '\t')) {
          state_ = kSizeExt;
          ++i;
        } else if (size_digits_ > 0 && c == '\r') {
          state_ = kSizeLf;
          ++i;
        } else {
          state_ = kError;
        }
        break;
      case kSizeExt:  // chunk extensions, passed through unread
        if (c == '\r') state_ = kSizeLf;
        if (c == '\n') state_ = kError;
        ++i;
        break;
      case kSizeLf:
        if (c != '\n') {
          state_ = kError;
          break;
        }
        ++i;
        size_digits_ = 0;
        line_length_ = 0;
        state_ = remaining_ == 0 ? kTrailer : kData;
        break;
      case kData: {
        size_t n = static_cast<size_t>(std::min<uint64_t>(remaining_, bytes.size() - i));
        i += n;
        remaining_ -= n;
        if (remaining_ == 0) state_ = kDataCr;
        break;
      }
      case kDataCr:
        state_ = c == '\r' ? kDataLf : kError;
        ++i;
        break;
      case kDataLf:
        state_ = c == '\n' ? kSize : kError;
        ++i;
        break;
      case kTrailer:  // trailer lines until an empty one
        if (c == '\r') {
          state_ = kTrailerLf;
        } else if (c == '\n' || ++line_length_ > kMaxHttpHead) {
          state_ = kError;
          break;
        }
        ++i;
        break;
      case kTrailerLf:
        if (c != '\n') {
          state_ = kError;
          break;
        }
        ++i;
        state_ = line_length_ == 0 ? kDone : kTrailer;
        line_length_ = 0;
        break;
      case kDone:
      case kError:
        break;
    }
  }
  return i;
}

const NetInjection* FindPlaceholder(const NetPolicy& policy, std::string_view text) {
  for (const NetInjection& i : policy.inject) {
    if (text.find(i.placeholder) != std::string_view::npos) return &i;
  }
  return nullptr;
}

InjectedHead InjectSecrets(const HttpHead& head, std::string_view host, const NetPolicy& policy,
                           const SecretLookup& lookup) {
  InjectedHead out;
  auto refuse = [&](int code, std::string reason, std::string secret = {}) {
    out.status = InjectedHead::kRefused;
    out.code = code;
    out.reason = std::move(reason);
    out.secret = std::move(secret);
    out.head.clear();
    return out;
  };
  // The request goes to the host the connection was decided and terminated for, and no other.
  int hosts = 0;
  std::optional<std::string> named;
  for (const auto& [key, value] : head.headers) {
    if (ToLower(key) != "host") continue;
    ++hosts;
    if (auto hp = ParseHostPort(value, 443)) named = NormaliseHostName(hp->host);
  }
  if (hosts != 1 || !named || *named != host) {
    return refuse(
        403, Cat("a request on a connection to ", host, " must name ", host, " as its Host, once"));
  }
  if (!head.target.starts_with("/") && head.target != "*") {
    return refuse(400, "a request to a server needs an origin-form target (/path)");
  }
  if (const NetInjection* i = FindPlaceholder(policy, Cat(head.method, " ", head.target))) {
    return refuse(403,
                  Cat("the placeholder of secret ", i->secret,
                      " is replaced in header values only, not in the request line"),
                  i->secret);
  }
  out.head = Cat(head.method, " ", head.target, " ", head.version, "\r\n");
  for (const auto& [key, value] : head.headers) {
    if (const NetInjection* i = FindPlaceholder(policy, key)) {
      return refuse(403, Cat("the placeholder of secret ", i->secret, " in a header name"),
                    i->secret);
    }
    if (!CleanValue(value)) {
      return refuse(400, Cat("the header ", key, " holds a control character"));
    }
    // Every placeholder in the value as sent is checked first, then all are replaced in one pass
    // over it: a real value is never searched again (it may hold anything).
    std::vector<std::pair<const NetInjection*, std::string>> found;
    for (const NetInjection& i : policy.inject) {
      if (value.find(i.placeholder) == std::string::npos) continue;
      if (std::find(i.hosts.begin(), i.hosts.end(), host) == i.hosts.end()) {
        return refuse(403,
                      Cat("the placeholder of secret ", i.secret, " is for ", Join(i.hosts, ", "),
                          " only, not for ", host),
                      i.secret);
      }
      if (std::find(i.headers.begin(), i.headers.end(), ToLower(key)) == i.headers.end()) {
        return refuse(403,
                      Cat("the placeholder of secret ", i.secret, " goes in the ",
                          Join(i.headers, " or "), " header only, not in ", key),
                      i.secret);
      }
      found.emplace_back(&i, std::string());
    }
    for (auto& [i, real] : found) {
      std::string why;
      std::optional<std::string> got = lookup(*i, &why);
      if (!got || got->empty() || !CleanValue(*got)) {
        out.status = InjectedHead::kFailed;
        out.code = 502;
        out.reason = !got           ? Cat("cannot read secret ", i->secret, ": ", why)
                     : got->empty() ? Cat("the value of secret ", i->secret, " is empty")
                                    : Cat("the value of secret ", i->secret,
                                          " holds characters a header cannot carry");
        out.secret = i->secret;
        out.head.clear();
        return out;
      }
      real = std::move(*got);
      if (std::find(out.injected.begin(), out.injected.end(), i->secret) == out.injected.end()) {
        out.injected.push_back(i->secret);
      }
    }
    std::string v;
    for (size_t at = 0; at < value.size();) {
      size_t first = std::string::npos;
      const std::pair<const NetInjection*, std::string>* which = nullptr;
      for (const auto& f : found) {
        size_t p = value.find(f.first->placeholder, at);
        if (p < first) {
          first = p;
          which = &f;
        }
      }
      if (!which) {
        v.append(value, at);
        break;
      }
      v.append(value, at, first - at);
      v += which->second;
      at = first + which->first->placeholder.size();
    }
    out.head += Cat(key, ": ", v, "\r\n");
  }
  out.head += "\r\n";
  return out;
}

}  // namespace ss
