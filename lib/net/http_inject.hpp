// What ss-net does to HTTP/1.1 inside a TLS connection it terminates for credential injection
// (net_policy.hpp NetInjection): the request head with placeholders replaced by real values, and
// the framing of bodies, which pass through unchanged. Pure functions, no I/O.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "http_head.hpp"
#include "net_policy.hpp"

namespace ss {

struct HttpResponseHead {
  std::string version;  // "HTTP/1.1"
  int status = 0;
  HttpHeaders headers;
  size_t size = 0;  // bytes of the head, the blank line included
  std::optional<std::string> Header(std::string_view name) const;
};

// A complete response head at the start of `bytes`; nothing when it is not one.
std::optional<HttpResponseHead> ParseHttpResponseHead(std::string_view bytes);

// How a message's body is delimited.
struct BodyFraming {
  enum Kind { kNone, kLength, kChunked, kUntilClose } kind = kNone;
  uint64_t length = 0;  // kLength
};

// A request's body: nothing when the head is ambiguous (Transfer-Encoding with Content-Length,
// a coding other than chunked, differing lengths): the way requests are smuggled past a proxy.
std::optional<BodyFraming> RequestFraming(const HttpHead& head);
// A response's body, for a request with `method` (RFC 9112 section 6.3).
std::optional<BodyFraming> ResponseFraming(const HttpResponseHead& head, std::string_view method);

// Follows a chunked body through the bytes given to it, to say where it ends.
class ChunkedScanner {
 public:
  // How many of `bytes` belong to the body; once the body has ended, done() is true and the
  // rest are the next message's. Sets error() on a malformed body.
  size_t Feed(std::string_view bytes);
  bool done() const { return state_ == kDone; }
  bool error() const { return state_ == kError; }

 private:
  enum State {
    kSize,
    kSizeExt,
    kSizeLf,
    kData,
    kDataCr,
    kDataLf,
    kTrailer,
    kTrailerLf,
    kDone,
    kError
  };
  State state_ = kSize;
  uint64_t remaining_ = 0;
  int size_digits_ = 0;
  size_t line_length_ = 0;  // of the trailer line being read
};

// The result of injecting into one request head.
struct InjectedHead {
  enum Status { kOk, kRefused, kFailed } status = kOk;
  std::string head;                   // kOk: the head to send upstream
  int code = 0;                       // kRefused: 400 or 403; kFailed: 502
  std::string reason;                 // one line, never a secret's value
  std::string secret;                 // the secret concerned, if any
  std::vector<std::string> injected;  // the secrets put in
};

// The real value of `injection`'s secret, or nothing with `why` set.
using SecretLookup =
    std::function<std::optional<std::string>(const NetInjection& injection, std::string* why)>;

// `head`, a request on a connection to `host` that ss-net terminates, made ready to go upstream:
// its Host must name `host`; every placeholder of a secret declared for `host` in the value of a
// header named for it is replaced by the secret's real value; a placeholder of any other secret,
// in another header, in the request line or a header name, or a control character in a header
// value refuses the request.
InjectedHead InjectSecrets(const HttpHead& head, std::string_view host, const NetPolicy& policy,
                           const SecretLookup& lookup);

// The first injection whose placeholder occurs in `text`, or nullptr: for traffic ss-net sees in
// clear to a host no secret is declared for.
const NetInjection* FindPlaceholder(const NetPolicy& policy, std::string_view text);

}  // namespace ss
