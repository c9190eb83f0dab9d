// Files and folders below an open folder, never following a symbolic link: for code that a link
// planted in a folder must not lead elsewhere (the projects folder, ss's records in it). Errors
// are ss::Error as fs.hpp's (66 missing, 77 permission, 74 I/O), naming the path as shown.
#pragma once

#include <sys/stat.h>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ss {

// Throws the ss::Error for `err` (errno) met doing `what` to `path`, shown as DisplayPath shows it.
[[noreturn]] void PathError(std::string_view what, const std::string& path, int err);

// `base`/`names`... for a message, the middle left out when there are more than `most` names (the
// first and the last most/2 kept, and the count of the others said); empty names are skipped.
std::string ElidedPath(const std::string& base, const std::vector<std::string_view>& names,
                       size_t most);
// A folder entry opened as a folder (O_NOFOLLOW), or -1 with errno.
int OpenDirAt(int dir_fd, const std::string& name);
// The names in a folder (without "." and ".."), with their d_type.
std::vector<std::pair<std::string, unsigned char>> ReadDirAt(int fd);
// Removes `name` in `parent_fd`, whatever it is, never following a symbolic link and never
// entering another filesystem mounted below it. Tolerates entries that disappear meanwhile (two
// cleaners, or a killed creator's orphans). Any depth: a few folders open at once, memory by the
// folders still to remove, not by their paths' length. `shown` is the parent's path for messages.
void RemoveEntryAt(int parent_fd, const std::string& name, unsigned char type,
                   const std::string& shown);
void RemoveDirAt(int parent_fd, const std::string& name, const std::string& shown);
bool SameFile(const struct stat& a, const struct stat& b);
// Renames `from` to `to` in one folder without replacing: false when `to` exists.
bool RenameNoReplace(int dir_fd, const std::string& from, const std::string& to);
// A new file `name` in `dir_fd` holding `data` (fails when it exists; never follows a link).
void CreateFileAt(int dir_fd, const std::string& name, std::string_view data,
                  const std::string& shown);
// A regular file of at most `max_bytes` in `dir_fd`, read without following a link: nullopt
// when it is missing; an empty string and `problem` set when it is something else or too big.
std::optional<std::string> ReadSmallFileAt(int dir_fd, const char* name, size_t max_bytes,
                                           std::string* problem);

}  // namespace ss
