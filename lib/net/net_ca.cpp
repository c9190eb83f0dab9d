#include "net_ca.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.hpp"
#include "fs.hpp"
#include "net_policy.hpp"
#include "paths.hpp"
#include "strings.hpp"

namespace ss {
namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
using BioPtr = std::unique_ptr<BIO, BioFree>;

std::string OpensslError() {
  unsigned long e = ERR_get_error();
  if (e == 0) return "unknown OpenSSL error";
  char text[256];
  ERR_error_string_n(e, text, sizeof text);
  ERR_clear_error();
  return text;
}

[[noreturn]] void Fail(std::string_view what) {
  throw Error(kExitSoftware, Cat("cannot ", what, ": ", OpensslError()));
}

EvpPkeyPtr NewKey() {
  EvpPkeyPtr key(EVP_EC_gen("P-256"));
  if (!key) Fail("make an EC key");
  return key;
}

// A random positive 159-bit serial (RFC 5280: at most 20 octets, unpredictable).
void SetSerial(X509* x) {
  unsigned char bytes[20];
  if (RAND_bytes(bytes, sizeof bytes) != 1) Fail("make a serial number");
  bytes[0] &= 0x7f;
  bytes[0] |= 0x01;  // never zero, never negative
  BIGNUM* bn = BN_bin2bn(bytes, sizeof bytes, nullptr);
  if (!bn || !BN_to_ASN1_INTEGER(bn, X509_get_serialNumber(x))) {
    BN_free(bn);
    Fail("set a serial number");
  }
  BN_free(bn);
}

void AddExtension(X509* x, X509V3_CTX* ctx, int nid, const std::string& value) {
  X509_EXTENSION* ext = X509V3_EXT_conf_nid(nullptr, ctx, nid, value.c_str());
  if (!ext) Fail(Cat("make the certificate extension ", OBJ_nid2sn(nid)));
  int ok = X509_add_ext(x, ext, -1);
  X509_EXTENSION_free(ext);
  if (!ok) Fail("add a certificate extension");
}

void SetName(X509_NAME* name, const std::string& common_name) {
  if (!X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8,
                                  reinterpret_cast<const unsigned char*>(common_name.c_str()), -1,
                                  -1, 0)) {
    Fail("set a certificate name");
  }
}

X509Ptr MakeCa(EVP_PKEY* key) {
  X509Ptr x(X509_new());
  if (!x || !X509_set_version(x.get(), 2)) Fail("make a certificate");
  SetSerial(x.get());
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -24 * 3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), 10L * 365 * 24 * 3600);
  char host[256] = {};
  ::gethostname(host, sizeof host - 1);
  SetName(X509_get_subject_name(x.get()), Cat("ss-net CA (", host[0] ? host : "localhost", ")"));
  X509_set_issuer_name(x.get(), X509_get_subject_name(x.get()));
  if (!X509_set_pubkey(x.get(), key)) Fail("set a certificate key");
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, x.get(), x.get(), nullptr, nullptr, 0);
  AddExtension(x.get(), &ctx, NID_basic_constraints, "critical,CA:TRUE");
  AddExtension(x.get(), &ctx, NID_key_usage, "critical,keyCertSign,cRLSign");
  AddExtension(x.get(), &ctx, NID_subject_key_identifier, "hash");
  AddExtension(x.get(), &ctx, NID_authority_key_identifier, "keyid:always");
  if (!X509_sign(x.get(), key, EVP_sha256())) Fail("sign the CA certificate");
  return x;
}

X509Ptr ReadCert(const std::string& pem, const std::string& path) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  X509Ptr x(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
  if (!x) throw Error(kExitDataErr, Cat(Quoted(path), " does not hold a PEM certificate"));
  return x;
}

EvpPkeyPtr ReadKey(const std::string& pem, const std::string& path) {
  BioPtr bio(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
  EvpPkeyPtr k(PEM_read_bio_PrivateKey(bio.get(), nullptr, nullptr, nullptr));
  if (!k) throw Error(kExitDataErr, Cat(Quoted(path), " does not hold a PEM private key"));
  return k;
}

void RequirePrivate(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    throw Error(kExitIoErr, Cat("cannot read ", Quoted(path), ": ", std::strerror(errno)));
  }
  if ((st.st_mode & 077) != 0 || st.st_uid != ::getuid()) {
    throw Error(kExitNoPerm, Cat("unsafe permissions on the private key ", Quoted(path)),
                {"it must be owned by you and readable only by you (mode 0600)"},
                {Cat("chmod 600 ", path)});
  }
}

std::string BioText(BIO* bio) {
  char* data = nullptr;
  long n = BIO_get_mem_data(bio, &data);
  return std::string(data, static_cast<size_t>(n));
}

}  // namespace

std::string CertToPem(X509* cert) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_X509(bio.get(), cert)) Fail("write a certificate");
  return BioText(bio.get());
}

std::string KeyToPem(EVP_PKEY* key) {
  BioPtr bio(BIO_new(BIO_s_mem()));
  if (!PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr)) {
    Fail("write a private key");
  }
  std::string pem = BioText(bio.get());
  // The BIO's copy is wiped before it is freed.
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  OPENSSL_cleanse(data, static_cast<size_t>(n));
  return pem;
}

std::string NetCaCertPath() { return StateDir() + "/net-ca.crt"; }

NetCa NetCa::LoadOrCreate(const std::string& dir_in) {
  std::string dir = dir_in.empty() ? StateDir() : dir_in;
  MakeDirs(dir, 0700);
  std::string key_path = dir + "/net-ca.key";
  std::string cert_path = dir + "/net-ca.crt";
  FileLock lock(key_path + ".lock");
  NetCa ca;
  if (PathExists(key_path)) {
    RequirePrivate(key_path);
    std::string key_pem = ReadFile(key_path);
    ca.key_ = ReadKey(key_pem, key_path);
    OPENSSL_cleanse(key_pem.data(), key_pem.size());
    ca.cert_pem_ = ReadFile(cert_path);
    ca.cert_ = ReadCert(ca.cert_pem_, cert_path);
    if (X509_check_private_key(ca.cert_.get(), ca.key_.get()) != 1 ||
        X509_check_ca(ca.cert_.get()) == 0) {
      ERR_clear_error();
      throw Error(kExitDataErr,
                  Cat(Quoted(cert_path), " is not the CA certificate of ", Quoted(key_path)), {},
                  {Cat("remove both to make a new CA (sandboxes then need provisioning again)")});
    }
    return ca;
  }
  ca.key_ = NewKey();
  ca.cert_ = MakeCa(ca.key_.get());
  ca.cert_pem_ = CertToPem(ca.cert_.get());
  // The certificate first: a key without its certificate would be a CA no one can use.
  AtomicWrite(cert_path, ca.cert_pem_, 0644);
  std::string key_pem = KeyToPem(ca.key_.get());
  AtomicWrite(key_path, key_pem, 0600);
  OPENSSL_cleanse(key_pem.data(), key_pem.size());
  return ca;
}

std::shared_ptr<const NetLeaf> NetCa::LeafFor(const std::string& host) {
  // The name goes into the subjectAltName's text form, where a ',' would start another entry.
  if (NormaliseHostName(host) != host) {
    throw Error(kExitDataErr, Cat(Quoted(host), " is not a host name a certificate can be for"));
  }
  std::lock_guard<std::mutex> hold(*mutex_);
  auto now = std::chrono::system_clock::now();
  auto it = leaves_.find(host);
  if (it != leaves_.end() && it->second->not_after - now > std::chrono::hours(24)) {
    return it->second;
  }
  auto leaf = std::make_shared<NetLeaf>();
  leaf->key = NewKey();
  X509Ptr x(X509_new());
  if (!x || !X509_set_version(x.get(), 2)) Fail("make a certificate");
  SetSerial(x.get());
  long validity = std::chrono::duration_cast<std::chrono::seconds>(kLeafValidity).count();
  X509_gmtime_adj(X509_getm_notBefore(x.get()), -24 * 3600);
  X509_gmtime_adj(X509_getm_notAfter(x.get()), validity);
  leaf->not_after = now + kLeafValidity;
  SetName(X509_get_subject_name(x.get()), host);
  X509_set_issuer_name(x.get(), X509_get_subject_name(cert_.get()));
  if (!X509_set_pubkey(x.get(), leaf->key.get())) Fail("set a certificate key");
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, cert_.get(), x.get(), nullptr, nullptr, 0);
  AddExtension(x.get(), &ctx, NID_basic_constraints, "critical,CA:FALSE");
  AddExtension(x.get(), &ctx, NID_key_usage, "critical,digitalSignature");
  AddExtension(x.get(), &ctx, NID_ext_key_usage, "serverAuth");
  AddExtension(x.get(), &ctx, NID_subject_key_identifier, "hash");
  AddExtension(x.get(), &ctx, NID_authority_key_identifier, "keyid:always");
  AddExtension(x.get(), &ctx, NID_subject_alt_name, Cat("DNS:", host));
  if (!X509_sign(x.get(), key_.get(), EVP_sha256())) Fail("sign a certificate");
  leaf->cert = std::move(x);
  leaves_[host] = leaf;
  return leaf;
}

}  // namespace ss
