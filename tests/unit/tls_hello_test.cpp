// Reading the server name from a TLS ClientHello: real hellos made by OpenSSL, the same hello cut
// into many records and segments, hand-made hellos with hostile lengths, and random damage.
#include "tls_hello.hpp"

#include <openssl/ssl.h>

#include <random>

#include "gtest/gtest.h"

namespace ss {
namespace {

// The bytes OpenSSL sends first as a client asking for `sni`.
std::string OpenSslHello(const char* sni) {
  SSL_CTX* ctx = SSL_CTX_new(TLS_client_method());
  SSL* ssl = SSL_new(ctx);
  BIO* in = BIO_new(BIO_s_mem());
  BIO* out = BIO_new(BIO_s_mem());
  SSL_set_bio(ssl, in, out);
  if (sni) SSL_set_tlsext_host_name(ssl, sni);
  SSL_connect(ssl);  // wants to read: the hello is in `out`
  char* data = nullptr;
  long n = BIO_get_mem_data(out, &data);
  std::string hello(data, n);
  SSL_free(ssl);
  SSL_CTX_free(ctx);
  return hello;
}

// The handshake of a one-record hello cut into records of `size` bytes.
std::string Refragment(const std::string& hello, size_t size) {
  std::string handshake = hello.substr(5);
  std::string out;
  for (size_t at = 0; at < handshake.size(); at += size) {
    std::string part = handshake.substr(at, size);
    out += std::string("\x16\x03\x01", 3);
    out += static_cast<char>(part.size() >> 8);
    out += static_cast<char>(part.size() & 0xff);
    out += part;
  }
  return out;
}

std::string Be(uint32_t v, int n) {
  std::string s;
  for (int i = n - 1; i >= 0; --i) s += static_cast<char>((v >> (8 * i)) & 0xff);
  return s;
}

// A hand-made hello with the given extensions block contents.
std::string HandHello(const std::string& extensions) {
  std::string body = Be(0x0303, 2) + std::string(32, 'r') + Be(0, 1) + Be(2, 2) + Be(0x1301, 2) +
                     Be(1, 1) + Be(0, 1) + Be(extensions.size(), 2) + extensions;
  std::string handshake = Be(1, 1) + Be(body.size(), 3) + body;
  return std::string("\x16\x03\x01", 3) + Be(handshake.size(), 2) + handshake;
}

std::string Extension(uint16_t type, const std::string& data) {
  return Be(type, 2) + Be(data.size(), 2) + data;
}

std::string ServerName(const std::string& name) {
  std::string entry = Be(0, 1) + Be(name.size(), 2) + name;
  return Extension(0, Be(entry.size(), 2) + entry);
}

TEST(ClientHello, ReadsOpenSslsHello) {
  ClientHello h = ParseClientHello(OpenSslHello("api.example.com"));
  EXPECT_EQ(h.status, ClientHello::kDone);
  EXPECT_EQ(h.sni, "api.example.com");
  EXPECT_FALSE(h.ech);
  ClientHello none = ParseClientHello(OpenSslHello(nullptr));
  EXPECT_EQ(none.status, ClientHello::kDone);
  EXPECT_EQ(none.sni, "");
}

TEST(ClientHello, EveryPrefixNeedsMoreAndAnyFragmentationReads) {
  std::string hello = OpenSslHello("api.example.com");
  for (size_t n = 0; n < hello.size(); ++n) {
    EXPECT_EQ(ParseClientHello(hello.substr(0, n)).status, ClientHello::kNeedMore) << n;
  }
  for (size_t size : {1u, 2u, 7u, 100u, 1000u}) {
    std::string fragmented = Refragment(hello, size);
    ClientHello h = ParseClientHello(fragmented);
    EXPECT_EQ(h.status, ClientHello::kDone) << size;
    EXPECT_EQ(h.sni, "api.example.com") << size;
    for (size_t n = 0; n < fragmented.size(); n += 13) {
      EXPECT_EQ(ParseClientHello(fragmented.substr(0, n)).status, ClientHello::kNeedMore) << n;
    }
  }
}

TEST(ClientHello, SeesEncryptedHellosAndAmbiguity) {
  ClientHello ech =
      ParseClientHello(HandHello(ServerName("public.example") + Extension(0xfe0d, "x")));
  EXPECT_EQ(ech.status, ClientHello::kDone);
  EXPECT_TRUE(ech.ech);
  EXPECT_EQ(ParseClientHello(HandHello(ServerName("a.test") + ServerName("b.test"))).status,
            ClientHello::kBad);
  std::string two_names = Be(0, 1) + Be(6, 2) + "a.test" + Be(0, 1) + Be(6, 2) + "b.test";
  EXPECT_EQ(ParseClientHello(HandHello(Extension(0, Be(two_names.size(), 2) + two_names))).status,
            ClientHello::kBad);
  EXPECT_EQ(ParseClientHello(HandHello(ServerName(""))).status, ClientHello::kBad);
  EXPECT_EQ(ParseClientHello(HandHello(ServerName("ok.test"))).sni, "ok.test");
}

TEST(ClientHello, RefusesWhatIsNotAHello) {
  EXPECT_EQ(ParseClientHello("GET / HTTP/1.1\r\n").status, ClientHello::kNotTls);
  EXPECT_EQ(ParseClientHello("G").status, ClientHello::kNotTls);
  EXPECT_EQ(ParseClientHello(std::string("\x17\x03\x03\x00\x05hello", 10)).status,
            ClientHello::kNotTls);
  // A server hello (type 2), a record of length 0, lengths that overrun.
  std::string server = HandHello("");
  server[5] = 2;
  EXPECT_EQ(ParseClientHello(server).status, ClientHello::kBad);
  EXPECT_EQ(ParseClientHello(std::string("\x16\x03\x01\x00\x00", 5)).status, ClientHello::kBad);
  std::string overrun = HandHello(ServerName("a.test"));
  overrun[overrun.size() - 8] = '\x7f';  // the name's length claims more than is there
  EXPECT_EQ(ParseClientHello(overrun).status, ClientHello::kBad);
  // A handshake claiming 16 MiB.
  std::string huge = std::string("\x16\x03\x01\x00\x04\x01\xff\xff\xff", 9);
  EXPECT_EQ(ParseClientHello(huge).status, ClientHello::kBad);
}

TEST(ClientHello, ATunnelCarriesTlsForItsConnectHostOnly) {
  auto problem = [](const std::string& bytes, const char* host) {
    return TunnelHelloProblem(ParseClientHello(bytes), host);
  };
  // The CONNECT host itself, in any case, with or without a trailing dot; no name at all.
  EXPECT_EQ(problem(OpenSslHello("allowed.test"), "allowed.test"), "");
  EXPECT_EQ(problem(OpenSslHello("Allowed.TEST."), "allowed.test"), "");
  EXPECT_EQ(problem(OpenSslHello("allowed.test"), "ALLOWED.test."), "");
  EXPECT_EQ(problem(OpenSslHello(nullptr), "allowed.test"), "");
  EXPECT_EQ(problem(Refragment(OpenSslHello("allowed.test"), 7), "allowed.test"), "");
  // Not TLS: not this check's to judge (SSH, plain HTTP through a tunnel).
  EXPECT_EQ(problem("SSH-2.0-OpenSSH_9.6\r\n", "allowed.test"), "");
  // Another name: fronting. Names that merely contain the host, and an address as the host.
  EXPECT_EQ(problem(OpenSslHello("evil.test"), "allowed.test"),
            "the TLS server name 'evil.test' is not the CONNECT host allowed.test");
  for (const char* sni : {"allowed.test.evil.test", "evil.allowed.test", "allowed.tes"}) {
    EXPECT_NE(problem(OpenSslHello(sni), "allowed.test"), "") << sni;
  }
  EXPECT_NE(problem(OpenSslHello("evil.test"), "203.0.113.7"), "");
  // Hidden or unreadable names.
  EXPECT_NE(problem(HandHello(ServerName("allowed.test") + Extension(0xfe0d, "x")), "allowed.test"),
            "");
  EXPECT_EQ(problem(HandHello(ServerName("a.test") + ServerName("b.test")), "a.test"),
            "not a well-formed TLS ClientHello");
  std::string hello = OpenSslHello("allowed.test");
  EXPECT_EQ(problem(hello.substr(0, hello.size() / 2), "allowed.test"),
            "an incomplete TLS ClientHello");
}

TEST(ClientHello, RandomDamageNeverReadsOutOfBounds) {
  std::mt19937 rng(1234);
  std::string hello = OpenSslHello("api.example.com");
  for (int round = 0; round < 20000; ++round) {
    std::string m = round % 2 ? hello : Refragment(hello, 1 + rng() % 300);
    for (int edits = 1 + rng() % 4; edits > 0; --edits) {
      switch (rng() % 3) {
        case 0:
          m[rng() % m.size()] = static_cast<char>(rng());
          break;
        case 1:
          m.resize(rng() % (m.size() + 1));
          break;
        default:
          m.insert(rng() % (m.size() + 1), std::string(1 + rng() % 8, static_cast<char>(rng())));
      }
      if (m.empty()) m = "x";
    }
    ClientHello h = ParseClientHello(m);
    if (h.status == ClientHello::kDone) {
      EXPECT_LE(h.sni.size(), m.size());
    }
  }
}

}  // namespace
}  // namespace ss
