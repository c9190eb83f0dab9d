// The install's certificate authority for ss-net's credential injection: ss-net terminates TLS
// only for hosts a secret is injected for, with a leaf certificate it mints for that host and
// signs with this CA, which provisioning makes every sandbox trust.
//
//   StateDir()/net-ca.key   the CA's private key (EC P-256, PEM, 0600); never leaves the host
//   StateDir()/net-ca.crt   its certificate (PEM, 0644): what a sandbox trusts
//
// Made once per install, on first use, under a lock. The certificates carry what strict clients
// require (Python's VERIFY_X509_STRICT, Node): the CA basicConstraints critical CA:TRUE, keyUsage
// keyCertSign and cRLSign, a subject key identifier; a leaf a subjectAltName, extendedKeyUsage
// serverAuth, an authority key identifier and a notBefore a day back (clocks in a sandbox lag).
#pragma once

#include <openssl/evp.h>
#include <openssl/x509.h>

#include <chrono>
#include <map>
#include <memory>
#include <mutex>
#include <string>

namespace ss {

struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct EvpPkeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};
using X509Ptr = std::unique_ptr<X509, X509Free>;
using EvpPkeyPtr = std::unique_ptr<EVP_PKEY, EvpPkeyFree>;

// A certificate for one host and its key.
struct NetLeaf {
  X509Ptr cert;
  EvpPkeyPtr key;
  std::chrono::system_clock::time_point not_after;
};

class NetCa {
 public:
  // The install's CA from `dir` (default StateDir()), made there first when it is missing.
  // Throws ss::Error: 74 when the files cannot be read or written, 77 when the key file is open
  // to others, 65 when they do not hold a CA.
  static NetCa LoadOrCreate(const std::string& dir = {});

  NetCa(NetCa&&) = default;

  X509* cert() const { return cert_.get(); }
  const std::string& cert_pem() const { return cert_pem_; }

  // A leaf for `host` (a normalised DNS name), from the cache while it has more than a day left.
  // Thread-safe.
  std::shared_ptr<const NetLeaf> LeafFor(const std::string& host);

  // How long a minted leaf is valid (from now; its notBefore is a day earlier).
  static constexpr std::chrono::hours kLeafValidity{24 * 7};

 private:
  NetCa() = default;
  X509Ptr cert_;
  EvpPkeyPtr key_;
  std::string cert_pem_;
  std::unique_ptr<std::mutex> mutex_ = std::make_unique<std::mutex>();
  std::map<std::string, std::shared_ptr<const NetLeaf>> leaves_;
};

// Where the CA's certificate is (StateDir()/net-ca.crt), and where a sandbox keeps it.
std::string NetCaCertPath();
inline constexpr const char* kSandboxCaPath = "/usr/local/share/ca-certificates/ss-net.crt";

// PEM text of a certificate or key (private keys unencrypted: the file's mode protects them).
std::string CertToPem(X509* cert);
std::string KeyToPem(EVP_PKEY* key);

}  // namespace ss
