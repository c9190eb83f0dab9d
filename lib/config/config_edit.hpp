// Edits of config.yaml that keep the user's file: comments, key order and formatting stay where
// a text edit can make the change; the result is checked as a whole before it replaces the file.
#pragma once

#include <string>
#include <string_view>
#include <utility>

#include "json_out.hpp"

namespace ss {

// Sets key to text in the file at `path` (created when missing), keeping the rest of the file
// as written: comments, key order and formatting. Validates the whole result before replacing
// the file atomically under a lock. Returns the canonical key and the value stored.
std::pair<std::string, Json> SetConfigValue(const std::string& path, std::string_view key,
                                            std::string_view text);

// Removes `key` (a section such as "projects.app", with every key below it) from the file at
// `path`, keeping the rest as written where it can; checked as SetConfigValue checks. Nothing
// happens when the key is not set.
void UnsetConfigSection(const std::string& path, std::string_view key);

}  // namespace ss
