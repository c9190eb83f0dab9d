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

namespace {

// How many folders of one removal are open at once. Below that depth the folders above are
// closed, and opened again through ".." on the way back up.
constexpr size_t kOpenLevels = 64;

// A folder of a removal in progress, from the top down.
struct RemovalLevel {
  std::string name;  // in the folder above
  dev_t dev = 0;
  ino_t ino = 0;
  Fd fd;                             // closed while it is more than kOpenLevels above the bottom
  std::vector<std::string> folders;  // its folders still to remove
  bool listed = false;
  int rounds = 0;  // times it was listed: something may write into it meanwhile
};

// The removal's path for a message, down to `leaf`.
std::string RemovalPath(const std::string& shown, const std::vector<RemovalLevel>& levels,
                        const std::string& leaf = {}) {
  std::vector<std::string_view> names;
  for (const auto& l : levels) names.emplace_back(l.name);
  if (!leaf.empty()) names.emplace_back(leaf);
  return ElidedPath(shown, names, 6);
}

class TreeRemoval {
 public:
  TreeRemoval(int parent_fd, const std::string& shown) : parent_fd_(parent_fd), shown_(shown) {}

  void Run(const std::string& name) {
    if (!Enter(parent_fd_, name)) return;
    while (!levels_.empty()) {
      RemovalLevel& top = levels_.back();
      if (!top.listed) List(top);
      if (!top.folders.empty()) {
        std::string child = std::move(top.folders.back());
        top.folders.pop_back();
        Enter(top.fd.get(), child);
        continue;
      }
      if (::unlinkat(Above(), top.name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) {
        levels_.pop_back();
        continue;
      }
      // Something wrote into it meanwhile: go round again.
      if ((errno == ENOTEMPTY || errno == EEXIST) && top.rounds < 20) {
        top.listed = false;
        continue;
      }
      Fail(errno);
    }
  }

 private:
  // Opens `name` in `at` as the next level down; false when it is not a folder (then it is
  // removed as it is: a link or a file put in its place) or is gone.
  bool Enter(int at, const std::string& name) {
    Fd fd(OpenDirAt(at, name));
    if (!fd.ok()) {
      int err = errno;
      if (err == ENOENT) return false;
      if (err == ENOTDIR || err == ELOOP) {
        if (::unlinkat(at, name.c_str(), 0) == 0 || errno == ENOENT) return false;
        err = errno;
      } else if (err == EACCES) {
        // An unreadable folder may still be removable when empty.
        if (::unlinkat(at, name.c_str(), AT_REMOVEDIR) == 0 || errno == ENOENT) return false;
      }
      PathError("remove", RemovalPath(shown_, levels_, name), err);
    }
    struct stat st;
    if (::fstat(fd.get(), &st) != 0) PathError("remove", RemovalPath(shown_, levels_, name), errno);
    if (!levels_.empty() && st.st_dev != levels_.front().dev) {
      std::string path = DisplayPath(RemovalPath(shown_, levels_, name));
      throw Error(kExitIoErr,
                  Cat("refusing to remove '", path, "': another filesystem is mounted there"), {},
                  {Cat("unmount it first: umount ", path)});
    }
    levels_.push_back({name, st.st_dev, st.st_ino, std::move(fd), {}, false, 0});
    if (levels_.size() > kOpenLevels) levels_[levels_.size() - kOpenLevels - 1].fd.Close();
    return true;
  }

  // Removes the bottom folder's files, and notes its folders to descend into.
  void List(RemovalLevel& level) {
    for (auto& [child, type] : ReadDirAt(level.fd.get())) {
      if (type == DT_DIR) {
        level.folders.push_back(std::move(child));
      } else if (::unlinkat(level.fd.get(), child.c_str(), 0) != 0 && errno != ENOENT) {
        // A folder that the listing did not call one (EISDIR), or a file that will not go.
        if (errno != EISDIR && errno != EPERM) {
          PathError("remove", RemovalPath(shown_, levels_, child), errno);
        }
        level.folders.push_back(std::move(child));
      }
    }
    level.listed = true;
    ++level.rounds;
  }

  // The folder holding the bottom one, opened again through ".." when it was closed: it must be
  // the folder it was (a tree moved meanwhile stops the removal instead of leading elsewhere).
  int Above() {
    if (levels_.size() == 1) return parent_fd_;
    RemovalLevel& above = levels_[levels_.size() - 2];
    if (above.fd.ok()) return above.fd.get();
    Fd fd(::openat(levels_.back().fd.get(), "..", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    struct stat st;
    if (!fd.ok() || ::fstat(fd.get(), &st) != 0) Fail(errno);
    if (st.st_dev != above.dev || st.st_ino != above.ino) {
      throw Error(kExitIoErr, Cat("cannot remove '", DisplayPath(RemovalPath(shown_, levels_)),
                                  "': it was moved while it was being removed"));
    }
    above.fd = std::move(fd);
    return above.fd.get();
  }

  [[noreturn]] void Fail(int err) { PathError("remove", RemovalPath(shown_, levels_), err); }

  int parent_fd_;
  const std::string& shown_;
  std::vector<RemovalLevel> levels_;
};

}  // namespace

std::string ElidedPath(const std::string& base, const std::vector<std::string_view>& names,
                       size_t most) {
  std::string out = base;
  size_t half = most / 2;
  for (size_t i = 0; i < names.size(); ++i) {
    if (names.size() > most && i == half) {
      out += Cat("/…", names.size() - 2 * half, " more folders…");
      i = names.size() - half - 1;
      continue;
    }
    if (!names[i].empty()) out += Cat("/", names[i]);
  }
  return out;
}

void RemoveEntryAt(int parent_fd, const std::string& name, unsigned char type,
                   const std::string& shown) {
  if (type != DT_DIR) {
    if (::unlinkat(parent_fd, name.c_str(), 0) == 0 || errno == ENOENT) return;
    if (errno != EISDIR && errno != EPERM) PathError("remove", Cat(shown, "/", name), errno);
  }
  RemoveDirAt(parent_fd, name, shown);
}

void RemoveDirAt(int parent_fd, const std::string& name, const std::string& shown) {
  TreeRemoval(parent_fd, shown).Run(name);
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
