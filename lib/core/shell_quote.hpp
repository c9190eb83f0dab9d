// Quoting for the few places where a remote shell cannot be avoided (an SSH exec request is one
// string that the sandbox user's login shell parses: a POSIX shell, or fish). Every word goes
// through ShellQuote(); nothing else in ss builds shell text.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ss {

// Returns a word that POSIX shells, zsh and fish all read back as exactly `s`, byte for byte.
// Words made only of [A-Za-z0-9_@%+=:,./-], not starting with =, are returned as they are;
// anything else is single-quoted, except each quote and backslash: fish, unlike POSIX shells,
// reads those two specially inside single quotes, so they are written outside the quotes, each
// after a backslash. NUL cannot appear in a shell word (or any argv), so it throws ss::Error.
std::string ShellQuote(std::string_view s);

// Quotes each word and joins them with spaces: a command line the shell splits back into argv.
std::string ShellJoin(const std::vector<std::string>& argv);

// The inverse for a command line written in a config file (agent.command): splits it into words
// as a POSIX shell would for plain words, '...' and "..." quoting and backslashes. Anything that
// needs a real shell ($, `, |, &, ;, <, >, (, ), globbing characters outside quotes) is refused
// with ss::Error(78) naming `what`, so the line is never handed to a shell to interpret.
std::vector<std::string> ShellSplit(std::string_view line, std::string_view what);

}  // namespace ss
