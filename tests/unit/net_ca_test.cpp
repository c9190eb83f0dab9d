// The install's CA for credential injection: made once with safe file modes, read back the same,
// and leaves that OpenSSL verifies against it with strict X.509 checks, for the host only.
#include "net_ca.hpp"

#include <openssl/x509v3.h>
#include <sys/stat.h>

#include "error.hpp"
#include "fs.hpp"
#include "gtest/gtest.h"

namespace ss {
namespace {

int Mode(const std::string& path) {
  struct stat st {};
  EXPECT_EQ(::stat(path.c_str(), &st), 0) << path;
  return st.st_mode & 07777;
}

// X509_verify_cert of `leaf` against `ca` alone, strict, for `host` as a TLS server.
int Verify(X509* ca, X509* leaf, const std::string& host) {
  X509_STORE* store = X509_STORE_new();
  X509_STORE_add_cert(store, ca);
  X509_STORE_CTX* ctx = X509_STORE_CTX_new();
  X509_STORE_CTX_init(ctx, store, leaf, nullptr);
  X509_VERIFY_PARAM* param = X509_STORE_CTX_get0_param(ctx);
  X509_VERIFY_PARAM_set_flags(param, X509_V_FLAG_X509_STRICT);
  if (!host.empty()) {  // "": the chain alone
    X509_VERIFY_PARAM_set_purpose(param, X509_PURPOSE_SSL_SERVER);
    X509_VERIFY_PARAM_set1_host(param, host.c_str(), host.size());
  }
  int ok = X509_verify_cert(ctx);
  int error = ok == 1 ? X509_V_OK : X509_STORE_CTX_get_error(ctx);
  X509_STORE_CTX_free(ctx);
  X509_STORE_free(store);
  return error;
}

TEST(NetCa, MadeOnceWithSafeModesAndReadBackTheSame) {
  TempDir dir;
  NetCa ca = NetCa::LoadOrCreate(dir.path());
  EXPECT_EQ(Mode(dir.path() + "/net-ca.key"), 0600);
  EXPECT_EQ(Mode(dir.path() + "/net-ca.crt"), 0644);
  EXPECT_EQ(ReadFile(dir.path() + "/net-ca.crt"), ca.cert_pem());
  NetCa again = NetCa::LoadOrCreate(dir.path());
  EXPECT_EQ(again.cert_pem(), ca.cert_pem());
  // A leaf from the second load verifies against the first's certificate: the same key.
  auto leaf = again.LeafFor("api.example.test");
  EXPECT_EQ(Verify(ca.cert(), leaf->cert.get(), "api.example.test"), X509_V_OK);
}

TEST(NetCa, TheCaHasWhatStrictClientsRequire) {
  TempDir dir;
  NetCa ca = NetCa::LoadOrCreate(dir.path());
  X509* x = ca.cert();
  EXPECT_EQ(X509_check_ca(x), 1);
  EXPECT_TRUE(X509_get_key_usage(x) & KU_KEY_CERT_SIGN);
  EXPECT_TRUE(X509_get_key_usage(x) & KU_CRL_SIGN);
  EXPECT_NE(X509_get0_subject_key_id(x), nullptr);
  int critical = 0;
  auto* bc = static_cast<BASIC_CONSTRAINTS*>(
      X509_get_ext_d2i(x, NID_basic_constraints, &critical, nullptr));
  ASSERT_NE(bc, nullptr);
  EXPECT_TRUE(bc->ca);
  EXPECT_EQ(critical, 1);
  BASIC_CONSTRAINTS_free(bc);
  EXPECT_EQ(EVP_PKEY_get_base_id(X509_get0_pubkey(x)), EVP_PKEY_EC);
  // Self-signed, and valid as its own root under strict checks.
  EXPECT_EQ(Verify(x, x, ""), X509_V_OK);
}

TEST(NetCa, LeavesVerifyForTheirHostOnlyAndAreCached) {
  TempDir dir;
  NetCa ca = NetCa::LoadOrCreate(dir.path());
  auto leaf = ca.LeafFor("api.anthropic.com");
  X509* x = leaf->cert.get();
  EXPECT_EQ(Verify(ca.cert(), x, "api.anthropic.com"), X509_V_OK);
  EXPECT_EQ(Verify(ca.cert(), x, "evil.example"), X509_V_ERR_HOSTNAME_MISMATCH);
  EXPECT_EQ(X509_check_private_key(x, leaf->key.get()), 1);
  EXPECT_EQ(X509_check_ca(x), 0);
  EXPECT_TRUE(X509_get_extended_key_usage(x) & XKU_SSL_SERVER);
  EXPECT_NE(X509_get0_authority_key_id(x), nullptr);
  EXPECT_EQ(
      ASN1_OCTET_STRING_cmp(X509_get0_authority_key_id(x), X509_get0_subject_key_id(ca.cert())), 0);
  // Backdated a day; valid for about a week.
  int days = 0, seconds = 0;
  ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, nullptr, X509_get0_notBefore(x)), 1);
  EXPECT_EQ(days, -1);
  ASSERT_EQ(ASN1_TIME_diff(&days, &seconds, nullptr, X509_get0_notAfter(x)), 1);
  EXPECT_GE(days, 6);
  EXPECT_LE(days, 7);
  // The same host: the same leaf; another host: another one.
  EXPECT_EQ(ca.LeafFor("api.anthropic.com").get(), leaf.get());
  EXPECT_NE(ca.LeafFor("api.github.com").get(), leaf.get());
  // A leaf from another install's CA does not verify against this one.
  TempDir other_dir;
  NetCa other = NetCa::LoadOrCreate(other_dir.path());
  EXPECT_NE(Verify(ca.cert(), other.LeafFor("api.anthropic.com")->cert.get(), "api.anthropic.com"),
            X509_V_OK);
}

TEST(NetCa, RefusesNamesThatCouldAddAnotherSubjectAltName) {
  TempDir dir;
  NetCa ca = NetCa::LoadOrCreate(dir.path());
  for (const char* bad : {"a.test,IP:127.0.0.1", "a.test,DNS:*", "", "Upper.test", "a b"}) {
    EXPECT_THROW(ca.LeafFor(bad), Error) << bad;
  }
}

TEST(NetCa, AKeyFileOpenToOthersIsRefused) {
  TempDir dir;
  NetCa::LoadOrCreate(dir.path());
  ::chmod((dir.path() + "/net-ca.key").c_str(), 0644);
  try {
    NetCa::LoadOrCreate(dir.path());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitNoPerm);
  }
}

TEST(NetCa, AMismatchedPairIsRefused) {
  TempDir a, b;
  NetCa::LoadOrCreate(a.path());
  NetCa::LoadOrCreate(b.path());
  AtomicWrite(a.path() + "/net-ca.crt", ReadFile(b.path() + "/net-ca.crt"));
  try {
    NetCa::LoadOrCreate(a.path());
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitDataErr);
  }
}

}  // namespace
}  // namespace ss
