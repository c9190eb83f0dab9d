#include "fs.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <ftw.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <utility>

#include "error.hpp"
#include "fd.hpp"
#include "fs_at.hpp"
#include "strings.hpp"

namespace ss {

void IoError(std::string_view what, const std::string& path, int err) {
  throw Error(err == ENOENT                   ? kExitNoInput
              : err == EACCES || err == EPERM ? kExitNoPerm
                                              : kExitIoErr,
              Cat("cannot ", what, " '", path, "': ", std::strerror(err)));
}

void WriteAll(int fd, std::string_view data, const std::string& path) {
  while (!data.empty()) {
    ssize_t n = ::write(fd, data.data(), data.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      IoError("write", path, errno);
    }
    data.remove_prefix(static_cast<size_t>(n));
  }
}

std::optional<std::string> ReadFileIfExists(const std::string& path) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (!fd.ok()) {
    if (errno == ENOENT || errno == ENOTDIR) return std::nullopt;
    IoError("read", path, errno);
  }
  std::string out;
  char buf[65536];
  while (true) {
    ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n < 0) {
      if (errno == EINTR) continue;
      IoError("read", path, errno);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
  }
  return out;
}

std::vector<std::string> Tail(const std::string& path, size_t lines) {
  std::vector<std::string> all = SplitLines(ReadFileIfExists(path).value_or(""));
  std::vector<std::string> out;
  for (size_t i = all.size() > lines ? all.size() - lines : 0; i < all.size(); ++i) {
    if (!Trim(all[i]).empty()) out.push_back(Cat("  ", all[i]));
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  auto content = ReadFileIfExists(path);
  if (!content) IoError("read", path, ENOENT);
  return *content;
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::lstat(path.c_str(), &st) == 0;
}

int64_t FreeBytes(const std::string& path) {
  struct statvfs vfs {};
  if (::statvfs(path.c_str(), &vfs) != 0) return -1;
  return static_cast<int64_t>(vfs.f_bavail) * static_cast<int64_t>(vfs.f_frsize);
}

bool IsDirectory(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

std::string Dirname(const std::string& path) {
  auto slash = path.find_last_of('/');
  if (slash == std::string::npos) return ".";
  if (slash == 0) return "/";
  return path.substr(0, slash);
}

std::string RealPath(const std::string& path) {
  char buf[PATH_MAX];
  return ::realpath(path.c_str(), buf) ? std::string(buf) : std::string();
}

std::string Basename(const std::string& path) {
  auto slash = path.find_last_of('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

void AtomicWrite(const std::string& path, std::string_view data, mode_t mode) {
  std::string dir = Dirname(path);
  std::string tmpl = Cat(dir, "/.", Basename(path), ".tmp.XXXXXX");
  Fd fd(::mkostemp(tmpl.data(), O_CLOEXEC));
  if (!fd.ok()) IoError("create a file in", dir, errno);
  try {
    WriteAll(fd.get(), data, tmpl);
    if (::fchmod(fd.get(), mode) != 0) IoError("chmod", tmpl, errno);
    if (::fsync(fd.get()) != 0) IoError("sync", tmpl, errno);
  } catch (...) {
    ::unlink(tmpl.c_str());
    throw;
  }
  fd.Close();
  if (::rename(tmpl.c_str(), path.c_str()) != 0) {
    int err = errno;
    ::unlink(tmpl.c_str());
    IoError("replace", path, err);
  }
  Fd dfd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (dfd.ok()) ::fsync(dfd.get());
}

void MakeDirs(const std::string& path, mode_t mode) {
  if (path.empty() || IsDirectory(path)) return;
  std::string parent = Dirname(path);
  if (parent != path) MakeDirs(parent, mode);
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) IoError("create directory", path, errno);
  if (!IsDirectory(path)) IoError("create directory", path, ENOTDIR);
}

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> names;
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return names;
  while (dirent* e = ::readdir(d)) {
    std::string_view name = e->d_name;
    if (name != "." && name != "..") names.emplace_back(name);
  }
  ::closedir(d);
  return names;
}

void RemoveTree(const std::string& path) {
  std::string tree = path;
  while (tree.size() > 1 && tree.back() == '/') tree.pop_back();
  struct stat st;
  if (::lstat(tree.c_str(), &st) != 0) {
    if (errno == ENOENT) return;
    IoError("remove", tree, errno);
  }
  if (!S_ISDIR(st.st_mode)) {
    if (::unlink(tree.c_str()) != 0 && errno != ENOENT) IoError("remove", tree, errno);
    return;
  }
  std::string parent = Dirname(tree);
  Fd at(::open(parent.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!at.ok()) IoError("remove", tree, errno);
  RemoveDirAt(at.get(), Basename(tree), parent);
}

namespace {
uid_t g_chown_uid;
gid_t g_chown_gid;
int ChownEntry(const char* path, const struct stat*, int, struct FTW*) {
  return ::lchown(path, g_chown_uid, g_chown_gid) == 0 ? 0 : errno;
}
}  // namespace

void ChownTree(const std::string& path, uid_t uid, gid_t gid) {
  static std::mutex mu;  // nftw takes no context: one walk at a time
  std::lock_guard<std::mutex> lock(mu);
  g_chown_uid = uid;
  g_chown_gid = gid;
  int rc = ::nftw(path.c_str(), &ChownEntry, 64, FTW_PHYS);
  if (rc != 0) IoError("change the owner of", path, rc > 0 ? rc : errno);
}

namespace {

// A lock file, made when missing: never through a link, never as a controlling terminal.
int OpenLockFile(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
  if (fd < 0) IoError("open lock file", path, errno);
  return fd;
}

}  // namespace

FileLock::FileLock(const std::string& path, Mode mode) {
  fd_.Reset(OpenLockFile(path));
  while (::flock(fd_.get(), mode == kShared ? LOCK_SH : LOCK_EX) != 0) {
    if (errno != EINTR) IoError("lock", path, errno);
  }
}

FileLock::FileLock(const std::string& path, Mode mode, std::chrono::milliseconds wait,
                   std::string_view what) {
  auto deadline = std::chrono::steady_clock::now() + wait;
  while (true) {
    if (auto lock = TryLock(path, mode)) {
      fd_ = std::move(lock->fd_);
      return;
    }
    if (std::chrono::steady_clock::now() >= deadline) {
      throw Error(kExitTempFail, Cat(what, " is busy: another ss command holds its lock"), {},
                  {"try again in a moment"});
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::optional<FileLock> FileLock::TryLock(const std::string& path, Mode mode) {
  FileLock lock;
  lock.fd_.Reset(OpenLockFile(path));
  if (::flock(lock.fd_.get(), (mode == kShared ? LOCK_SH : LOCK_EX) | LOCK_NB) != 0) {
    if (errno == EWOULDBLOCK) return std::nullopt;
    IoError("lock", path, errno);
  }
  return lock;
}

TempDir::TempDir(const std::string& parent, std::string_view prefix) {
  std::string base = parent;
  if (base.empty()) {
    const char* tmp = std::getenv("TMPDIR");
    base = tmp && *tmp ? tmp : "/tmp";
  }
  std::string tmpl = Cat(base, "/", prefix, "XXXXXX");
  if (::mkdtemp(tmpl.data()) == nullptr) IoError("create a directory in", base, errno);
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  try {
    RemoveTree(path_);
  } catch (...) {
  }
}

std::string TempDir::Release() { return std::exchange(path_, std::string()); }

}  // namespace ss
