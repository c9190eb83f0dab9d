#include "shell_quote.hpp"

#include <utility>

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
  // (zsh would expand a word starting with '=' to a command's path.)
  bool safe = !s.empty() && s[0] != '=';
  for (char c : s) safe = safe && IsSafe(c);
  if (safe) return std::string(s);
  if (s.empty()) return "''";
  std::string out;
  out.reserve(s.size() + 2);
  bool quoted = false;
  for (char c : s) {
    bool special = c == '\'' || c == '\\';
    if (special == quoted) {  // close the quotes before ' or \, open them after
      out += '\'';
      quoted = !quoted;
    }
    if (special) out += '\\';
    out += c;
  }
  if (quoted) out += '\'';
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

std::vector<std::string> ShellSplit(std::string_view line, std::string_view what) {
  std::vector<std::string> words;
  std::string cur;
  bool in_word = false;
  auto refuse = [&](char c) {
    throw Error(
        kExitConfig,
        std::string(what) + ": '" + c + "' needs a shell; write plain words, quoted as needed", {},
        {"put a shell pipeline in a script in the sandbox and name the script instead"});
  };
  for (size_t i = 0; i < line.size(); ++i) {
    char c = line[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) words.push_back(std::exchange(cur, std::string()));
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      size_t end = line.find('\'', i + 1);
      if (end == std::string_view::npos)
        throw Error(kExitConfig, std::string(what) + ": unterminated '");
      cur.append(line.substr(i + 1, end - i - 1));
      i = end;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < line.size() && line[j] != '"'; ++j) {
        if (line[j] == '\\' && j + 1 < line.size() &&
            std::string_view("\\\"$`").find(line[j + 1]) != std::string_view::npos) {
          cur += line[++j];
        } else if (line[j] == '$' || line[j] == '`') {
          refuse(line[j]);
        } else {
          cur += line[j];
        }
      }
      if (j >= line.size()) throw Error(kExitConfig, std::string(what) + ": unterminated \"");
      i = j;
    } else if (c == '\\') {
      if (i + 1 < line.size()) cur += line[++i];
    } else if (std::string_view("$`|&;<>()*?[]{}#").find(c) != std::string_view::npos) {
      refuse(c);
    } else {
      cur += c;
    }
  }
  if (in_word) words.push_back(cur);
  return words;
}

}  // namespace ss
