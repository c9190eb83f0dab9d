// The server name a TLS client asks for, read from its ClientHello without terminating TLS: what
// ss-net's transparent proxy decides on. The hello may span several records and TCP segments
// (post-quantum key shares make it larger than one packet); every length is checked.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace ss {

struct ClientHello {
  enum Status {
    kNeedMore,  // a prefix of a ClientHello: read more (at most kMaxClientHello in all)
    kDone,      // complete: sni (maybe empty) and ech are set
    kNotTls,    // the bytes do not start a TLS handshake
    kBad,       // a TLS handshake, but not a well-formed ClientHello
  } status = kNeedMore;
  std::string sni;   // the host_name of the server_name extension, as sent
  bool ech = false;  // carries an encrypted_client_hello extension (the real name is hidden)
};

inline constexpr size_t kMaxClientHello = 64 * 1024;

ClientHello ParseClientHello(std::string_view bytes);

// Why a tunnel opened by CONNECT to `host` may not go on with the ClientHello its client sent
// first (complete: kDone, kBad or kNotTls), or "" when it may. The server name must be `host`
// or absent: the server behind `host` may serve other names too, and routes by the one asked
// for (domain fronting). A malformed hello and an encrypted one (which hides the real name) are
// refused; bytes that are not TLS at all are not this check's to judge.
std::string TunnelHelloProblem(const ClientHello& hello, std::string_view host);

}  // namespace ss
