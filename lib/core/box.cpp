#include "box.hpp"

namespace ss {

size_t DisplayWidth(std::string_view s) {
  size_t n = 0;
  for (unsigned char c : s) {
    if ((c & 0xC0) != 0x80) ++n;  // count lead bytes only
  }
  return n;
}

std::string Box(const std::vector<std::string>& lines, size_t inner_width, size_t indent) {
  size_t width = inner_width;
  for (const auto& l : lines) {
    if (l != kBoxRule) width = std::max(width, DisplayWidth(l) + 4);
  }
  auto repeat = [](std::string_view piece, size_t n) {
    std::string out;
    for (size_t i = 0; i < n; ++i) out += piece;
    return out;
  };
  std::string pad(indent, ' ');
  std::string out = pad + "╭" + repeat("─", width) + "╮\n";
  for (const auto& l : lines) {
    if (l == kBoxRule) {
      out += pad + "│  " + repeat("─", width - 3) + " │\n";
      continue;
    }
    out += pad + "│  " + l + std::string(width - 2 - DisplayWidth(l), ' ') + "│\n";
  }
  out += pad + "╰" + repeat("─", width) + "╯\n";
  return out;
}

}  // namespace ss
