#include "shell_quote.hpp"

#include "error.hpp"

namespace ss {
namespace {

bool IsSafe(char c) {
  if (c >= 'a' && c <= 'z') return true;
  if (c >= 'A' && c <= 'Z') return true;
  if (c >= '0' && c <= '9') return true;
  switch (c) {
    case '_':
    case '@':
    case '%':
    case '+':
    case '=':
    case ':':
    case ',':
    case '.':
    case '/':
    case '-':
      return true;
    default:
      return false;
  }
}

}  // namespace

std::string ShellQuote(std::string_view s) {
  if (s.find('\0') != std::string_view::npos) {
    throw Error(kExitDataErr, "an argument contains a NUL byte, which no command can receive");
  }
  bool safe = !s.empty();
  for (char c : s) safe = safe && IsSafe(c);
  if (safe) return std::string(s);
  std::string out;
  out.reserve(s.size() + 2);
  out += '\'';
  for (char c : s) {
    if (c == '\'') {
      out += "'\\''";
    } else {
      out += c;
    }
  }
  out += '\'';
  return out;
}

std::string ShellJoin(const std::vector<std::string>& argv) {
  std::string out;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (i) out += ' ';
    out += ShellQuote(argv[i]);
  }
  return out;
}

}  // namespace ss
