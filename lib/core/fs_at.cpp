#include "fs_at.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "strings.hpp"

namespace ss {

void PathError(std::string_view what, const std::string& path, int err) {
  IoError(what, DisplayPath(path), err);
}

int OpenDirAt(int dir_fd, const std::string& name) {
  return ::openat(dir_fd, name.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
}

std::vector<std::pair<std::string, unsigned char>> ReadDirAt(int fd) {
  std::vector<std::pair<std::string, unsigned char>> out;
  int list_fd = ::dup(fd);
  if (list_fd < 0) return out;
  ::fcntl(list_fd, F_SETFD, FD_CLOEXEC);
  DIR* d = ::fdopendir(list_fd);
  if (d == nullptr) {
    ::close(list_fd);
    return out;
  }
  ::rewinddir(d);
  while (dirent* e = ::readdir(d)) {
    std::string_view n = e->d_name;
    if (n == "." || n == "..") continue;
    out.emplace_back(n, e->d_type);
  }
  ::closedir(d);
  return out;
}

void RemoveEntryAt(int parent_fd, const std::string& name, unsigned char type,
                   const std::string& shown) {
  if (type == DT_DIR) {
    RemoveDirAt(parent_fd, name, shown);
    return;
  }
  if (::unlinkat(parent_fd, name.c_str(), 0) == 0 || errno == ENOENT) return;
  if (errno == EISDIR || errno == EPERM) {
    RemoveDirAt(parent_fd, name, shown);
    return;
  }
  PathError("remove", Cat(shown, "/", name), errno);
}

void RemoveDirAt(int parent_fd, const std::string& name, const std::string& shown) {
  std::string path = Cat(shown, "/", name);
  for (int attempt = 0;; ++attempt) {
    Fd fd(OpenDirAt(parent_fd, name));
    if (!fd.ok()) {
      if (errno == ENOENT) return;
      if (errno == ENOTDIR || errno == ELOOP) {
        if (::unlinkat(parent_fd, name.c_str(), 0) == 0 || errno == ENOENT) return;
      }
      PathError("remove", path, errno);
    }
    for (const auto& [child, type] : ReadDirAt(fd.get())) {
      RemoveEntryAt(fd.get(), child, type, path);
    }
    fd.Close();
    if (::unlinkat(parent_fd, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) return;
    // Something wrote into it meanwhile: go round again.
    if ((errno == ENOTEMPTY || errno == EEXIST) && attempt < 20) continue;
    PathError("remove", path, errno);
  }
}

bool SameFile(const struct stat& a, const struct stat& b) {
  return a.st_dev == b.st_dev && a.st_ino == b.st_ino;
}

bool RenameNoReplace(int dir_fd, const std::string& from, const std::string& to) {
  int renamed = platform::RenameNoReplace(dir_fd, from.c_str(), to.c_str());
  if (renamed == 0) return true;
  if (renamed == EEXIST || renamed == ENOTEMPTY) return false;
  if (renamed != ENOSYS) PathError("rename", from, renamed);
  // A file system without RENAME_NOREPLACE: check and rename under the folder's lock, which
  // every creator on this path takes.
  if (::flock(dir_fd, LOCK_EX) != 0) PathError("lock", from, errno);
  struct stat st;
  bool taken = ::fstatat(dir_fd, to.c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0;
  int rc = taken ? -1 : ::renameat(dir_fd, from.c_str(), dir_fd, to.c_str());
  int err = errno;
  ::flock(dir_fd, LOCK_UN);
  if (taken) return false;
  if (rc != 0) {
    if (err == EEXIST || err == ENOTEMPTY) return false;
    PathError("rename", from, err);
  }
  return true;
}

void CreateFileAt(int dir_fd, const std::string& name, std::string_view data,
                  const std::string& shown) {
  std::string path = Cat(shown, "/", name);
  Fd fd(::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666));
  if (!fd.ok()) PathError("create", path, errno);
  WriteAll(fd.get(), data, DisplayPath(path));
  if (::close(fd.Release()) != 0) PathError("write", path, errno);
}

std::optional<std::string> ReadSmallFileAt(int dir_fd, const char* name, size_t max_bytes,
                                           std::string* problem) {
  Fd fd(::openat(dir_fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC));
  if (!fd.ok()) {
    if (errno == ENOENT) return std::nullopt;
    *problem = errno == ELOOP ? Cat(name, " is a symbolic link")
                              : Cat("cannot read ", name, ": ", std::strerror(errno));
    return std::string();
  }
  struct stat st;
  if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) {
    *problem = Cat(name, " is not a file");
    return std::string();
  }
  if (static_cast<size_t>(st.st_size) > max_bytes) {
    *problem = Cat(name, " is larger than ", max_bytes / 1024, " KB");
    return std::string();
  }
  std::string out;
  char buf[8192];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      *problem = Cat("cannot read ", name, ": ", std::strerror(errno));
      return std::string();
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    if (out.size() > max_bytes) {
      *problem = Cat(name, " is larger than ", max_bytes / 1024, " KB");
      return std::string();
    }
  }
  return out;
}

}  // namespace ss
