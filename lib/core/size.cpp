#include "size.hpp"

#include <cstdio>

#include "strings.hpp"

namespace ss {

std::optional<int64_t> ParseSize(std::string_view text) {
  std::string s = ToLower(text);
  size_t digits = 0;
  while (digits < s.size() && s[digits] >= '0' && s[digits] <= '9') ++digits;
  if (digits == 0 || digits > 12) return std::nullopt;
  std::string unit = s.substr(digits);
  int64_t mult = unit == "mb" ? kMiB : unit == "gb" ? kGiB : unit == "tb" ? kTiB : 0;
  if (mult == 0) return std::nullopt;
  int64_t value = std::stoll(s.substr(0, digits));
  if (value > (INT64_MAX / mult)) return std::nullopt;
  return value * mult;
}

std::string FormatSizeConfig(int64_t bytes) {
  if (bytes % kTiB == 0 && bytes >= kTiB) return Cat(bytes / kTiB, "TB");
  if (bytes % kGiB == 0 && bytes >= kGiB) return Cat(bytes / kGiB, "GB");
  return Cat(bytes / kMiB, "MB");
}

std::string FormatSizeHuman(int64_t bytes) {
  struct Unit {
    int64_t size;
    const char* name;
  } units[] = {{kTiB, "TB"}, {kGiB, "GB"}, {kMiB, "MB"}, {1024, "KB"}};
  for (const auto& u : units) {
    if (bytes >= u.size) {
      double v = static_cast<double>(bytes) / static_cast<double>(u.size);
      char buf[32];
      if (bytes % u.size == 0 || v >= 10) {
        std::snprintf(buf, sizeof buf, "%.0f %s", v, u.name);
      } else {
        std::snprintf(buf, sizeof buf, "%.1f %s", v, u.name);
      }
      return buf;
    }
  }
  return Cat(bytes, " B");
}

}  // namespace ss
