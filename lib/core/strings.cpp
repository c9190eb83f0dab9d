#include "strings.hpp"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstdio>

namespace ss {

std::vector<std::string> Split(std::string_view s, char sep) {
  std::vector<std::string> out;
  size_t start = 0;
  while (true) {
    size_t pos = s.find(sep, start);
    if (pos == std::string_view::npos) {
      out.emplace_back(s.substr(start));
      return out;
    }
    out.emplace_back(s.substr(start, pos - start));
    start = pos + 1;
  }
}

std::vector<std::string> SplitLines(std::string_view s) {
  std::vector<std::string> out;
  if (s.empty()) return out;
  out = Split(s, '\n');
  if (!out.empty() && out.back().empty()) out.pop_back();
  return out;
}

std::string Join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (size_t i = 0; i < parts.size(); ++i) {
    if (i) out += sep;
    out += parts[i];
  }
  return out;
}

std::string_view Trim(std::string_view s) {
  auto is_space = [](char c) { return std::isspace(static_cast<unsigned char>(c)) != 0; };
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::string ToLower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}

std::string Quoted(std::string_view s) { return Cat("'", s, "'"); }

std::string Printable(std::string_view s, bool lines) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    auto u = static_cast<unsigned char>(s[i]);
    if (u < 0x80) {
      if (s[i] == '\t' || (lines && s[i] == '\n') || (u >= 0x20 && u != 0x7f)) {
        out += s[i];
      } else {
        out += '^';
        out += u == 0x7f ? '?' : static_cast<char>(u + 0x40);
      }
      continue;
    }
    // UTF-8: a whole, shortest-form character passes unless it is a C1 control (a terminal reads
    // U+009B as CSI) or one that reorders or hides text (bidi controls, zero-width marks); any
    // other byte is shown as \xNN.
    size_t n = u >= 0xf0 && u < 0xf5 ? 4 : u >= 0xe0 ? 3 : u >= 0xc2 && u < 0xe0 ? 2 : 0;
    uint32_t cp = n == 2 ? u & 0x1f : n == 3 ? u & 0x0f : u & 0x07;
    bool whole = n > 0 && i + n <= s.size();
    for (size_t k = 1; whole && k < n; ++k) {
      auto b = static_cast<unsigned char>(s[i + k]);
      whole = (b & 0xc0) == 0x80;
      cp = (cp << 6) | (b & 0x3f);
    }
    whole = whole && !(n == 3 && cp < 0x800) && !(n == 4 && (cp < 0x10000 || cp > 0x10ffff)) &&
            !(cp >= 0xd800 && cp <= 0xdfff);
    bool hidden = (cp >= 0x80 && cp <= 0x9f) || (cp >= 0x200b && cp <= 0x200f) ||
                  (cp >= 0x202a && cp <= 0x202e) || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xfeff;
    if (!whole) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    } else if (hidden) {
      char buf[12];
      std::snprintf(buf, sizeof buf, "<U+%04X>", cp);
      out += buf;
      i += n - 1;
    } else {
      out.append(s.substr(i, n));
      i += n - 1;
    }
  }
  return out;
}

std::optional<int64_t> ParseDecimal(std::string_view s) {
  if (s.empty() || s.size() > 19) return std::nullopt;
  int64_t v = 0;
  for (char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    if (v > (INT64_MAX - (c - '0')) / 10) return std::nullopt;
    v = v * 10 + (c - '0');
  }
  return v;
}

bool OnlyChars(std::string_view s, std::string_view chars) {
  // A range joins two letters or two digits of the same kind ("a-z", "0-7"); any other '-' is
  // itself ("9-_" once read as a range from '9' to '_' and refused every hyphen).
  auto same_kind = [](char a, char b) {
    auto kind = [](char x) {
      return (x >= 'a' && x <= 'z')   ? 1
             : (x >= 'A' && x <= 'Z') ? 2
             : (x >= '0' && x <= '9') ? 3
                                      : 0;
    };
    return kind(a) != 0 && kind(a) == kind(b) && a <= b;
  };
  auto allowed = [&](char c) {
    for (size_t i = 0; i < chars.size(); ++i) {
      if (i + 2 < chars.size() && chars[i + 1] == '-' && same_kind(chars[i], chars[i + 2])) {
        if (c >= chars[i] && c <= chars[i + 2]) return true;
        i += 2;
      } else if (c == chars[i]) {
        return true;
      }
    }
    return false;
  };
  for (char c : s) {
    if (!allowed(c)) return false;
  }
  return true;
}

bool NameOf(std::string_view s, std::string_view first, std::string_view rest, size_t max) {
  return !s.empty() && s.size() <= max && OnlyChars(s.substr(0, 1), first) &&
         OnlyChars(s.substr(1), rest);
}

std::string DoubleEvery(std::string_view s, char c) {
  std::string out;
  for (char x : s) {
    out += x;
    if (x == c) out += c;
  }
  return out;
}

}  // namespace ss
