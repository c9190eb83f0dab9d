// The spec's rounded boxes ("╭───╮ │ x │ ╰───╯"), sized by display width (UTF-8 aware: the box
// drawing characters, "·" and "•" are one column each).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ss {

// Columns `s` takes on a terminal (one per code point; wide characters are not used here).
size_t DisplayWidth(std::string_view s);

// Lines of a box around `lines`, each padded to `inner_width` (or wider when a line needs it),
// with two spaces of margin inside and `indent` spaces before each line. Ends with a newline.
std::string Box(const std::vector<std::string>& lines, size_t inner_width, size_t indent = 0);

// A box line that is a rule across the box ("  ───────").
inline constexpr std::string_view kBoxRule = "\x01rule";

}  // namespace ss
