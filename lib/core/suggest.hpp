// "Did you mean ...?" for verbs, config keys, project and snapshot names.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

// Optimal string alignment distance (a transposition counts as one edit).
size_t EditDistance(std::string_view a, std::string_view b);

// The closest candidate, if it is close enough to be a plausible typo of `word`
// (distance <= max(1, len/3), or `word` is a prefix of exactly one candidate).
std::optional<std::string> Suggest(std::string_view word,
                                   const std::vector<std::string>& candidates);

}  // namespace ss
