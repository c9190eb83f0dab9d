// Sizes as config.yaml and the spec write them: a whole number and MB, GB or TB (powers of
// 1024, any letter case): "512MB", "8GB", "1TB".
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ss {

inline constexpr int64_t kMiB = 1024LL * 1024;
inline constexpr int64_t kGiB = 1024LL * kMiB;
inline constexpr int64_t kTiB = 1024LL * kGiB;

std::optional<int64_t> ParseSize(std::string_view text);
// The canonical config form: "16GB", "512MB", "1TB" (the largest unit that divides evenly).
std::string FormatSizeConfig(int64_t bytes);
// The spec's human form: "16 GB", "512 MB", "3.2 GB", "145 MB".
std::string FormatSizeHuman(int64_t bytes);

}  // namespace ss
