// Small string helpers used across the library.
#pragma once

#include <cstdint>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

template <typename... Args>
std::string Cat(const Args&... args) {
  std::ostringstream out;
  (out << ... << args);
  return out.str();
}

std::vector<std::string> Split(std::string_view s, char sep);
std::vector<std::string> SplitLines(std::string_view s);
std::string Join(const std::vector<std::string>& parts, std::string_view sep);
std::string_view Trim(std::string_view s);
// `s` with every `c` written twice: the escape of QEMU's option values (,) and libssh's paths (%).
std::string DoubleEvery(std::string_view s, char c);
std::string ToLower(std::string_view s);
// "'x'" quoting used in messages (not for shells: see shell_quote.hpp).
std::string Quoted(std::string_view s);
// Text from a sandbox made safe for a terminal: control characters shown as cat -v does ("^[",
// "^?"), tabs kept, and line breaks too when `lines`; UTF-8 C1 controls and characters that
// reorder or hide text as "<U+202E>", bytes that are not UTF-8 as "\xff".
std::string Printable(std::string_view s, bool lines = false);
// Whether every character of `s` is one of `chars`, where "a-z", "A-Z" and "0-9" (or narrower,
// two letters or two digits of one kind) are ranges and every other '-' is itself. Linear, for
// names of any length (std::regex recurses per character).
bool OnlyChars(std::string_view s, std::string_view chars);
// A decimal number that fits int64_t and nothing else (no sign, no space), or nullopt.
std::optional<int64_t> ParseDecimal(std::string_view s);
// Whether `s` is 1 to `max` characters, the first one of `first`, the others of `rest`.
bool NameOf(std::string_view s, std::string_view first, std::string_view rest, size_t max);

}  // namespace ss
