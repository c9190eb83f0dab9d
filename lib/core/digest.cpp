#include "digest.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <sys/random.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <memory>

#include "error.hpp"
#include "fd.hpp"
#include "strings.hpp"

namespace ss {
namespace {

using CtxPtr = std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)>;

// The digest of `length` bytes of `fd` from `offset` (to its end when length < 0), read with
// pread; `what` names it in errors.
std::string DigestFd(int fd, int64_t offset, int64_t length, const EVP_MD* md,
                     const std::string& what) {
  CtxPtr ctx(EVP_MD_CTX_new(), &EVP_MD_CTX_free);
  EVP_DigestInit_ex(ctx.get(), md, nullptr);
  char buf[1 << 16];
  while (length != 0) {
    size_t want =
        length < 0 ? sizeof buf : static_cast<size_t>(std::min<int64_t>(length, sizeof buf));
    ssize_t n = ::pread(fd, buf, want, offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(kExitIoErr, Cat("cannot read ", what, ": ", std::strerror(errno)));
    if (n == 0) {
      if (length < 0) break;
      throw Error(kExitIoErr, Cat("cannot read ", what, ": it ended early"));
    }
    EVP_DigestUpdate(ctx.get(), buf, static_cast<size_t>(n));
    offset += n;
    if (length > 0) length -= n;
  }
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx.get(), out, &len);
  return std::string(reinterpret_cast<char*>(out), len);
}

std::string DigestFile(const std::string& path, const EVP_MD* md) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) throw Error(kExitIoErr, Cat("cannot read '", path, "': ", std::strerror(errno)));
  return DigestFd(fd.get(), 0, -1, md, Cat("'", path, "'"));
}

std::string Hex(const std::string& bytes) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  for (unsigned char c : bytes) {
    out += digits[c >> 4];
    out += digits[c & 15];
  }
  return out;
}

}  // namespace

struct Sha256Stream::Ctx {
  CtxPtr ctx{EVP_MD_CTX_new(), &EVP_MD_CTX_free};
};

Sha256Stream::Sha256Stream() : ctx_(new Ctx) {
  EVP_DigestInit_ex(ctx_->ctx.get(), EVP_sha256(), nullptr);
}
Sha256Stream::~Sha256Stream() { delete ctx_; }

void Sha256Stream::Update(std::string_view data) {
  EVP_DigestUpdate(ctx_->ctx.get(), data.data(), data.size());
}

void Sha256Stream::UpdateZeros(int64_t n) {
  static const char zeros[1 << 16] = {};
  while (n > 0) {
    size_t take = static_cast<size_t>(std::min<int64_t>(n, sizeof zeros));
    EVP_DigestUpdate(ctx_->ctx.get(), zeros, take);
    n -= static_cast<int64_t>(take);
  }
}

void Sha256Stream::UpdateFd(int fd, int64_t offset, int64_t length, const std::string& what) {
  char buf[1 << 16];
  while (length > 0) {
    ssize_t n =
        ::pread(fd, buf, static_cast<size_t>(std::min<int64_t>(length, sizeof buf)), offset);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw Error(kExitIoErr, Cat("cannot read ", what, ": ", std::strerror(errno)));
    if (n == 0) throw Error(kExitIoErr, Cat("cannot read ", what, ": it ended early"));
    EVP_DigestUpdate(ctx_->ctx.get(), buf, static_cast<size_t>(n));
    offset += n;
    length -= n;
  }
}

std::string Sha256Stream::Hex() {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(ctx_->ctx.get(), out, &len);
  return ss::Hex(std::string(reinterpret_cast<char*>(out), len));
}

std::string Sha256Hex(std::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_Digest(data.data(), data.size(), out, &len, EVP_sha256(), nullptr);
  return Hex(std::string(reinterpret_cast<char*>(out), len));
}

std::string Sha256FileHex(const std::string& path) { return Hex(DigestFile(path, EVP_sha256())); }

std::string Sha256FdHex(int fd, int64_t offset, int64_t length, const std::string& what) {
  return Hex(DigestFd(fd, offset, length, EVP_sha256(), what));
}

std::string Sha512IntegrityOfFile(const std::string& path) {
  std::string raw = DigestFile(path, EVP_sha512());
  std::string b64(4 * ((raw.size() + 2) / 3) + 1, '\0');
  int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(b64.data()),
                          reinterpret_cast<const unsigned char*>(raw.data()),
                          static_cast<int>(raw.size()));
  b64.resize(static_cast<size_t>(n));
  return "sha512-" + b64;
}

std::string RandomNonce() {
  unsigned char bytes[8] = {};
  size_t got = 0;
  while (got < sizeof bytes) {
    ssize_t n = ::getrandom(bytes + got, sizeof bytes - got, 0);
    if (n <= 0) throw Error(kExitSoftware, "cannot read random bytes");
    got += static_cast<size_t>(n);
  }
  std::string hex;
  for (unsigned char b : bytes) {
    char buf[3];
    std::snprintf(buf, sizeof buf, "%02x", b);
    hex += buf;
  }
  return hex;
}

}  // namespace ss
