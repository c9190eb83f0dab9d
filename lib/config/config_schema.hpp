// The keys of config.yaml: one row per key (ConfigSchema()), its type, bounds, default and alias,
// and how a value is checked, parsed from the command line and written back.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "error.hpp"
#include "json_out.hpp"
#include "sandbox_name.hpp"

namespace ss {

enum class ValueType { kInt, kSize, kBool, kString, kEnum, kStringList };

struct KeySpec {
  std::string key;  // dotted path; "*" matches one name ("sandboxes.*.cpus")
  ValueType type;
  std::string description;
  std::vector<std::string> choices{};  // kEnum
  // Bounds for kInt and kSize (computed from the host where the range depends on it).
  int64_t (*min)() = nullptr;
  int64_t (*max)() = nullptr;
  std::string range_note{};           // e.g. "host cores" — how the bound was chosen
  Json (*default_value)() = nullptr;  // null Json: no default (unset)
  std::string alias{};                // the spec's short name ("cpus")
};

const std::vector<KeySpec>& ConfigSchema();

// Resolves an alias and matches wildcards: "cpus" → "vm.cpus"; "sandboxes.work.cpus" →
// the "sandboxes.*.cpus" row. Returns nullptr for an unknown key.
const KeySpec* FindKeySpec(std::string_view key, std::string* canonical = nullptr);

// Every key a user may name, for messages and completion ("cpus, memory, disk, version, ...").
std::vector<std::string> ValidKeyNames();
// "unknown config key: foo" + the valid keys + a did-you-mean (exit 64).
Error UnknownKeyError(std::string_view key);

// Checks one value; on failure returns the problem ("must be between 2 and 8 (host cores)").
// `as_written` (the user's text, when there was one) names the value in the message.
std::optional<std::string> CheckValue(const KeySpec& spec, const Json& value,
                                      std::string_view as_written = {});
// Parses command-line text for a key ("16gb" → bytes, "true", "a,b" → list). Throws ss::Error.
Json ParseValueText(const KeySpec& spec, std::string_view key, std::string_view text);
// The config-file form of a value: "16GB", "true", "a, b".
std::string FormatValue(const KeySpec& spec, const Json& value);
// The valid range or choices, for messages: "2 .. 8 (host cores)", "auto, qemu, lxd".
std::string DescribeRange(const KeySpec& spec);

// Whether `key` matches the schema row `pattern` ("sandboxes.*.cpus"); `bad_name` is set when a
// "*" met a word that is no sandbox name.
bool MatchPattern(std::string_view pattern, std::string_view key, bool* bad_name);
// Whether `path` is a section (a map of keys) of the schema: "vm", "sandboxes", "sandboxes.*".
bool IsSection(std::string_view path, bool* bad);
// The rows whose value may be written as a map of secrets (`secrets`, `sandboxes.*.secrets`, ...).
bool IsSecretsKey(std::string_view key);
// YAML's words for booleans (true/yes/on, false/no/off) and plain whole numbers.
std::optional<bool> ParseBool(std::string_view text);
std::optional<int64_t> ParseInt(std::string_view text);
// What a value of the row must be, in words: "a whole number", "one of: a, b".
std::string TypeWord(const KeySpec& spec);
// A scalar converted to the row's type (`quoted`: written in quotes, so never a number or a
// boolean); null Json and `problem` set when it is not one.
Json ConvertScalar(const KeySpec& spec, const std::string& text, bool quoted, std::string* problem);

}  // namespace ss
