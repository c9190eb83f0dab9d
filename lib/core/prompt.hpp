// Asking the user: only on a terminal. Without one, a question that needs an answer is a usage
// error (exit 64) that names the flag to pass instead, never a guess.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace ss {

// Prints `question` (e.g. "Continue? [y/N]: ") on stderr and reads a line from stdin: true for
// y or yes (any case). `assume_yes` (--yes) answers without asking. Without a terminal on stdin
// it throws ss::Error(64) telling to pass `yes_flag`.
bool Confirm(std::string_view question, bool assume_yes, std::string_view yes_flag = "--yes");

// Reads one line after printing `prompt`; nullopt at end of input.
std::optional<std::string> ReadLine(std::string_view prompt);

}  // namespace ss
