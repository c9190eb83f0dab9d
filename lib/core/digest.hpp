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
// "sha512-<base64>", the form of npm's dist.integrity.
std::string Sha512IntegrityOfFile(const std::string& path);

// 16 hex digits from the kernel's random source: markers, tokens.
std::string RandomNonce();

}  // namespace ss
