// Files ss writes are written atomically (temp file in the same directory, fsync, rename, fsync
// of the directory) while holding an flock(2) on a lock file beside them, so a reader never sees
// half a file and two writers never interleave.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "fd.hpp"

namespace ss {

// Throws the ss::Error for `err` (errno) met doing `what` ("read", "write") to `path`: 66 when it
// is missing, 77 when permission is denied, 74 otherwise.
[[noreturn]] void IoError(std::string_view what, const std::string& path, int err);
// Writes all of `data` to `fd` (through EINTR); IoError naming `path` when it cannot.
void WriteAll(int fd, std::string_view data, const std::string& path);

std::string ReadFile(const std::string& path);  // throws ss::Error (66 missing, 74 I/O)
std::optional<std::string> ReadFileIfExists(const std::string& path);
// The last `lines` lines of a file (a log), its blank ones left out, indented for an error's
// details; none when it cannot be read.
std::vector<std::string> Tail(const std::string& path, size_t lines);
bool PathExists(const std::string& path);   // lstat: a dangling symlink exists
bool IsDirectory(const std::string& path);  // stat: follows symlinks
// Bytes free to a user on the filesystem holding `path` (statvfs), or -1 when it cannot tell.
int64_t FreeBytes(const std::string& path);
// The names in a directory, without . and ..; none when it cannot be read.
std::vector<std::string> ListDir(const std::string& dir);

void AtomicWrite(const std::string& path, std::string_view data, mode_t mode = 0644);
// mkdir -p; new directories get `mode`.
void MakeDirs(const std::string& path, mode_t mode = 0755);
// Removes a tree without following symlinks (a symlink is removed, never its target) and without
// crossing into another filesystem mounted inside it, whatever its depth (RemoveDirAt).
void RemoveTree(const std::string& path);

// chown -R without following symbolic links (a link itself is given to uid:gid).
void ChownTree(const std::string& path, uid_t uid, gid_t gid);

std::string Dirname(const std::string& path);
std::string Basename(const std::string& path);
// realpath(3): absolute, links resolved; empty when it cannot be resolved.
std::string RealPath(const std::string& path);

// An exclusive (or shared) flock on `path`, created 0600 if missing, released on destruction.
class FileLock {
 public:
  enum Mode { kExclusive, kShared };
  explicit FileLock(const std::string& path, Mode mode = kExclusive);
  // Gives up after `wait` and throws ss::Error(75) naming `what`.
  FileLock(const std::string& path, Mode mode, std::chrono::milliseconds wait,
           std::string_view what);
  // Returns nullopt instead of waiting when someone else holds it.
  static std::optional<FileLock> TryLock(const std::string& path, Mode mode = kExclusive);
  FileLock(FileLock&& other) noexcept = default;
  FileLock& operator=(FileLock&&) = delete;
  FileLock(const FileLock&) = delete;

 private:
  FileLock() = default;
  Fd fd_;
};

// A temporary directory removed (recursively) on destruction.
class TempDir {
 public:
  explicit TempDir(const std::string& parent = {}, std::string_view prefix = "ss.");
  TempDir(const TempDir&) = delete;
  ~TempDir();
  const std::string& path() const { return path_; }
  // Keep the directory (it becomes the caller's).
  std::string Release();

 private:
  std::string path_;
};

}  // namespace ss
