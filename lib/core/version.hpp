// Build identity, filled in by CMake at configure time.
#pragma once

#include <string_view>

namespace ss {

std::string_view Version();    // "0.1.0"
std::string_view Commit();     // short git commit, or "unknown"
std::string_view BuildDate();  // "2026-11-25"
// "ss 0.1.0 (commit abc1234, built 2026-11-25)"
std::string VersionLine(std::string_view tool);

}  // namespace ss
