// Checksums with OpenSSL's EVP (linked through libssh already).
#pragma once

#include <string>
#include <string_view>

namespace ss {

std::string Sha256Hex(std::string_view data);
std::string Sha256FileHex(const std::string& path);
// "sha512-<base64>", the form of npm's dist.integrity.
std::string Sha512IntegrityOfFile(const std::string& path);

}  // namespace ss
