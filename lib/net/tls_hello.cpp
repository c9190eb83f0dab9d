#include "tls_hello.hpp"

#include <cstdint>

#include "http_head.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// Reads big-endian integers and length-prefixed blocks from a byte range; any read past its
// end leaves it failed, and every later read returns zeros.
class Reader {
 public:
  explicit Reader(std::string_view b) : b_(b) {}
  bool ok() const { return ok_; }
  bool empty() const { return b_.empty(); }
  uint32_t Int(size_t n) {
    if (!ok_ || b_.size() < n) return Fail();
    uint32_t v = 0;
    for (size_t i = 0; i < n; ++i) v = (v << 8) | static_cast<uint8_t>(b_[i]);
    b_.remove_prefix(n);
    return v;
  }
  std::string_view Bytes(size_t n) {
    if (!ok_ || b_.size() < n) {
      Fail();
      return {};
    }
    std::string_view v = b_.substr(0, n);
    b_.remove_prefix(n);
    return v;
  }
  Reader Block(size_t length_bytes) {
    std::string_view inside = Bytes(Int(length_bytes));
    return Reader(inside, ok_);
  }
  std::string_view Rest() const { return b_; }

 private:
  Reader(std::string_view b, bool ok) : b_(b), ok_(ok) {}
  uint32_t Fail() {
    ok_ = false;
    b_ = {};
    return 0;
  }
  std::string_view b_;
  bool ok_ = true;
};

constexpr uint8_t kHandshake = 22;
constexpr uint8_t kClientHelloType = 1;
constexpr uint16_t kServerName = 0;
constexpr uint16_t kEncryptedClientHello = 0xfe0d;

}  // namespace

ClientHello ParseClientHello(std::string_view bytes) {
  ClientHello hello;
  // Gather the handshake bytes from consecutive handshake records.
  std::string handshake;
  size_t at = 0;
  for (;;) {
    if (bytes.size() - at < 5) {
      if (at == 0 && !bytes.empty() && static_cast<uint8_t>(bytes[0]) != kHandshake) {
        hello.status = ClientHello::kNotTls;
      }
      break;
    }
    Reader header(bytes.substr(at, 5));
    uint32_t type = header.Int(1);
    uint32_t major = header.Int(1);
    header.Int(1);
    uint32_t length = header.Int(2);
    if (type != kHandshake || major != 3) {
      hello.status = at == 0 ? ClientHello::kNotTls : ClientHello::kBad;
      return hello;
    }
    if (length == 0 || length > 16384 + 2048) {
      hello.status = ClientHello::kBad;
      return hello;
    }
    if (bytes.size() - at - 5 < length) break;  // this record is not all here yet
    handshake.append(bytes.substr(at + 5, length));
    at += 5 + length;
    if (handshake.size() >= 4) {
      Reader h(handshake);
      if (h.Int(1) != kClientHelloType) {
        hello.status = ClientHello::kBad;
        return hello;
      }
      uint32_t body = h.Int(3);
      if (body + 4 > kMaxClientHello) {
        hello.status = ClientHello::kBad;
        return hello;
      }
      if (handshake.size() >= body + 4) break;
    }
  }
  if (hello.status == ClientHello::kNotTls) return hello;
  if (handshake.size() < 4) {
    hello.status = bytes.size() >= kMaxClientHello ? ClientHello::kBad : ClientHello::kNeedMore;
    return hello;
  }
  Reader h(handshake);
  h.Int(1);
  uint32_t body_length = h.Int(3);
  if (handshake.size() < body_length + 4) {
    hello.status = bytes.size() >= kMaxClientHello ? ClientHello::kBad : ClientHello::kNeedMore;
    return hello;
  }
  Reader body(h.Bytes(body_length));
  body.Int(2);     // legacy_version
  body.Bytes(32);  // random
  body.Block(1);   // legacy_session_id
  body.Block(2);   // cipher_suites
  body.Block(1);   // legacy_compression_methods
  hello.status = ClientHello::kBad;
  if (!body.ok()) return hello;
  if (body.empty()) {  // no extensions at all: no name
    hello.status = ClientHello::kDone;
    return hello;
  }
  Reader extensions = body.Block(2);
  bool seen_name = false;
  while (extensions.ok() && !extensions.empty()) {
    uint32_t type = extensions.Int(2);
    Reader data = extensions.Block(2);
    if (type == kEncryptedClientHello) hello.ech = true;
    if (type != kServerName) continue;
    if (seen_name) return hello;  // two server_name extensions: ambiguous
    seen_name = true;
    Reader list = data.Block(2);
    if (!data.ok() || !data.empty()) return hello;
    while (list.ok() && !list.empty()) {
      uint32_t name_type = list.Int(1);
      Reader name = list.Block(2);
      if (!list.ok()) return hello;
      if (name_type != 0) continue;  // only host_name is defined
      if (!hello.sni.empty() || name.Rest().empty()) return hello;
      hello.sni = std::string(name.Rest());
    }
    if (!list.ok()) return hello;
  }
  if (!extensions.ok()) return hello;
  hello.status = ClientHello::kDone;
  return hello;
}

std::string TunnelHelloProblem(const ClientHello& hello, std::string_view host) {
  switch (hello.status) {
    case ClientHello::kNotTls:
      return std::string();
    case ClientHello::kNeedMore:
      return "an incomplete TLS ClientHello";
    case ClientHello::kBad:
      return "not a well-formed TLS ClientHello";
    case ClientHello::kDone:
      break;
  }
  if (hello.ech) {
    return Cat("an encrypted ClientHello hides the server name (the tunnel is for ", host,
               " only)");
  }
  if (!hello.sni.empty() && !SameHostName(hello.sni, host)) {
    return Cat("the TLS server name ", Quoted(hello.sni), " is not the CONNECT host ", host);
  }
  return std::string();
}

}  // namespace ss
