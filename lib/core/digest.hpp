// Checksums with OpenSSL's EVP (linked through libssh already).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace ss {

std::string Sha256Hex(std::string_view data);
std::string Sha256FileHex(const std::string& path);
// Of `length` bytes of `fd` from `offset` (to the end when length < 0); `what` names it in errors.
std::string Sha256FdHex(int fd, int64_t offset, int64_t length, const std::string& what);
// A sha256 fed piece by piece.
class Sha256Stream {
 public:
  Sha256Stream();
  ~Sha256Stream();
  Sha256Stream(const Sha256Stream&) = delete;
  Sha256Stream& operator=(const Sha256Stream&) = delete;
  void Update(std::string_view data);
  void UpdateZeros(int64_t n);
  // `length` bytes of `fd` from `offset`, read with pread; `what` names it in errors.
  void UpdateFd(int fd, int64_t offset, int64_t length, const std::string& what);
  std::string Hex();  // once, at the end

 private:
  struct Ctx;
  Ctx* ctx_;
};

// "sha512-<base64>", the form of npm's dist.integrity.
std::string Sha512IntegrityOfFile(const std::string& path);

// 16 hex digits from the kernel's random source: markers, tokens.
std::string RandomNonce();

}  // namespace ss
