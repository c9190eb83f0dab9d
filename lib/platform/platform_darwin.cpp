// The platform layer on macOS (platform.hpp). macOS has no mount or user namespaces, no
// id-mapped mounts and no transparent-proxy redirection: those calls answer ENOSYS (or nothing),
// and what needs them (QEMU's shared folders through views, ss-net's fence) is Linux's.

#include <dirent.h>
#include <fcntl.h>
#include <libproc.h>
#include <mach-o/dyld.h>
#include <stdio.h>  // renameatx_np, RENAME_EXCL
#include <sys/mount.h>
#include <sys/param.h>
#include <sys/proc_info.h>
#include <sys/stat.h>
#include <sys/sysctl.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "platform.hpp"

namespace ss::platform {
namespace {

template <typename T>
std::optional<T> SysctlValue(const char* name) {
  T value{};
  size_t size = sizeof value;
  if (::sysctlbyname(name, &value, &size, nullptr, 0) != 0 || size != sizeof value) {
    return std::nullopt;
  }
  return value;
}

std::string SysctlString(const char* name) {
  char buf[256];
  size_t size = sizeof buf;
  if (::sysctlbyname(name, buf, &size, nullptr, 0) != 0 || size == 0) return "";
  return std::string(buf, strnlen(buf, size));
}

int CloseOnExec(int fd, bool nonblock) {
  if (::fcntl(fd, F_SETFD, FD_CLOEXEC) != 0) return errno;
  if (nonblock && ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK) != 0) return errno;
  return 0;
}

}  // namespace

const char* const kName = "macos";
// Sockets made by Socket() carry SO_NOSIGPIPE instead.
const int kSendFlags = 0;

int Pipe(int fds[2], bool nonblock) {
  if (::pipe(fds) != 0) return errno;
  for (int i : {0, 1}) {
    if (int err = CloseOnExec(fds[i], nonblock); err != 0) {
      ::close(fds[0]);
      ::close(fds[1]);
      return err;
    }
  }
  return 0;
}

int Socket(int domain, int type, bool nonblock) {
  int fd = ::socket(domain, type, 0);
  if (fd < 0) return -1;
  int on = 1;
  int err = CloseOnExec(fd, nonblock);
  if (err == 0 && ::setsockopt(fd, SOL_SOCKET, SO_NOSIGPIPE, &on, sizeof on) != 0) err = errno;
  if (err != 0) {
    ::close(fd);
    errno = err;
    return -1;
  }
  return fd;
}

int RenameNoReplace(int dir_fd, const char* from, const char* to) {
  if (::renameatx_np(dir_fd, from, dir_fd, to, RENAME_EXCL) == 0) return 0;
  return errno == ENOTSUP || errno == EINVAL ? ENOSYS : errno;
}

ssize_t CopyRange(int, int64_t*, int, size_t) {
  errno = ENOSYS;
  return -1;
}

int64_t ModifiedNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtimespec.tv_sec) * 1000000000 + st.st_mtimespec.tv_nsec;
}

int64_t ChangedNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_ctimespec.tv_sec) * 1000000000 + st.st_ctimespec.tv_nsec;
}

std::optional<int64_t> BirthTime(int fd) {
  struct stat st {};
  if (::fstat(fd, &st) != 0 || st.st_birthtimespec.tv_sec <= 0) return std::nullopt;
  return st.st_birthtimespec.tv_sec;
}

DirReader::DirReader(int fd) : fd_(fd) {
  int copy = ::dup(fd);
  if (copy >= 0) {
    dir_ = ::fdopendir(copy);
    if (dir_ == nullptr) ::close(copy);
  }
}

DirReader::~DirReader() {
  if (dir_ != nullptr) ::closedir(static_cast<DIR*>(dir_));
}

std::optional<DirReader::Entry> DirReader::Next() {
  if (dir_ == nullptr) return std::nullopt;
  dirent* e = ::readdir(static_cast<DIR*>(dir_));
  if (e == nullptr) return std::nullopt;
  return Entry{e->d_name, e->d_type};
}

std::string ExecutablePath() {
  char buf[PATH_MAX];
  uint32_t size = sizeof buf;
  if (::_NSGetExecutablePath(buf, &size) != 0) return "";
  char resolved[PATH_MAX];
  return ::realpath(buf, resolved) != nullptr ? resolved : buf;
}

std::optional<ProcessInfo> Process(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  struct proc_bsdinfo info {};
  if (::proc_pidinfo(pid, PROC_PIDTBSDINFO, 0, &info, PROC_PIDTBSDINFO_SIZE) !=
      PROC_PIDTBSDINFO_SIZE) {
    return std::nullopt;
  }
  ProcessInfo p;
  p.name = std::string(info.pbi_comm, strnlen(info.pbi_comm, sizeof info.pbi_comm));
  p.start = info.pbi_start_tvsec * 1000000ull + info.pbi_start_tvusec;
  constexpr uint32_t kZombie = 5;  // SZOMB in <sys/proc.h>
  p.ended = info.pbi_status == kZombie;
  return p;
}

// KERN_PROCARGS2: argc, the executable's path, padding NULs, then argv's strings.
std::vector<std::string> ProcessArgs(pid_t pid) {
  std::vector<std::string> argv;
  int mib[3] = {CTL_KERN, KERN_PROCARGS2, pid};
  int max = 0;
  size_t size = sizeof max;
  int argmax_mib[2] = {CTL_KERN, KERN_ARGMAX};
  if (::sysctl(argmax_mib, 2, &max, &size, nullptr, 0) != 0 || max <= 0) return argv;
  std::string buf(static_cast<size_t>(max), '\0');
  size = buf.size();
  if (::sysctl(mib, 3, buf.data(), &size, nullptr, 0) != 0 || size < sizeof(int)) return argv;
  int argc = 0;
  std::memcpy(&argc, buf.data(), sizeof argc);
  size_t at = buf.find('\0', sizeof argc);
  at = buf.find_first_not_of('\0', at == std::string::npos ? size : at);
  while (at != std::string::npos && at < size && static_cast<int>(argv.size()) < argc) {
    size_t end = buf.find('\0', at);
    if (end == std::string::npos || end > size) end = size;
    argv.push_back(buf.substr(at, end - at));
    at = end + 1;
  }
  return argv;
}

std::vector<pid_t> Processes() {
  int n = ::proc_listallpids(nullptr, 0);
  if (n <= 0) return {};
  std::vector<pid_t> pids(static_cast<size_t>(n) + 64);
  n = ::proc_listallpids(pids.data(), static_cast<int>(pids.size() * sizeof(pid_t)));
  pids.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return pids;
}

int SignalOnParentDeath(int) { return ENOSYS; }

int AdoptOrphans() { return ENOSYS; }

int64_t MemoryBytes() {
  return static_cast<int64_t>(SysctlValue<uint64_t>("hw.memsize").value_or(0));
}

uint64_t MappedIds() { return 4294967295u; }

Accel DetectAccel(const std::string&) {
  if (SysctlValue<int>("kern.hv_support").value_or(0) == 1) {
    return {"hvf", "HVF (Hypervisor.framework)"};
  }
  return {"tcg",
          "TCG, software emulation (about 10x slower): this Mac does not support the Hypervisor "
          "framework"};
}

MacHost Mac() {
  MacHost m;
  m.is_macos = true;
  m.apple_silicon = SysctlValue<int>("hw.optional.arm64").value_or(0) == 1;
  m.virtualization = SysctlValue<int>("kern.hv_support").value_or(0) == 1;
  m.version = SysctlString("kern.osproductversion");
  return m;
}

int PrivateMounts(int& previous) {
  previous = -1;
  return ENOSYS;
}
int ReturnToMounts(int) { return ENOSYS; }

int MountChrootSystem(const std::string&, std::vector<std::string>&, std::string& failed) {
  failed = "the system's file systems for the image build";
  return ENOSYS;
}

bool IsMountRoot(const std::string&) { return false; }

int DetachMount(const std::string&) { return ENOSYS; }

std::string FileSystemName(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return "unknown";
  return fs.f_fstypename;
}

UserNamespace MakeUserNamespace(const std::string&, const std::string&) {
  UserNamespace ns;
  ns.error = "macOS has no user namespaces";
  return ns;
}

MountResult MountIdmapped(const std::string&, int, const std::string&) {
  return {ENOSYS, MountResult::Stage::kMap};
}

std::optional<sockaddr_storage> OriginalDestination(int, bool) { return std::nullopt; }

int OpenAddressWatch() {
  errno = ENOSYS;
  return -1;
}

int DrainAddressWatch(int) {
  errno = ENOSYS;
  return -1;
}

// No O_PATH: a folder opened to be searched where the system can (O_SEARCH), read otherwise; a
// file opened for reading without waiting (a FIFO would block).
int OpenToLook(int dir_fd, const char* name, bool folder) {
#ifdef O_SEARCH
  int how = folder ? O_SEARCH | O_DIRECTORY : O_RDONLY | O_NONBLOCK;
#else
  int how = folder ? O_RDONLY | O_DIRECTORY : O_RDONLY | O_NONBLOCK;
#endif
  return ::openat(dir_fd, name, how | O_NOFOLLOW | O_CLOEXEC);
}

int ChangeModeBits(int fd, mode_t add, mode_t remove) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return -1;
  return ::fchmod(fd, ((st.st_mode & 07777) | add) & ~remove);
}

bool HasFileCapabilities(int, const char*) { return false; }

int TakeOffFileCapabilities(int) { return 0; }

int OpenFolderWatch() {
  errno = ENOSYS;
  return -1;
}

int AddFolderWatch(int, int) {
  errno = ENOSYS;
  return -1;
}

int AddFileWatch(int, int) {
  errno = ENOSYS;
  return -1;
}

void RemoveFolderWatch(int, int) {}

int ReadFolderEvents(int, std::vector<FolderEvent>&) {
  errno = ENOSYS;
  return -1;
}

}  // namespace ss::platform
