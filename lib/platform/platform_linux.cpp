// The platform layer on Linux (platform.hpp).

// The new mount API comes from the kernel's header; glibc's <sys/mount.h> clashes with it, so
// mount(2) and umount2(2) are called by number, and umount2's flags spelt out. The C library's
// <netinet/in.h> must come before the kernel's netfilter headers.
#include <netinet/in.h>
// (keep above)
#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/netfilter_ipv4.h>
#include <linux/netfilter_ipv6/ip6_tables.h>
#include <linux/rtnetlink.h>
#include <sched.h>
#include <signal.h>
#include <sys/inotify.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "platform.hpp"

namespace ss::platform {
namespace {

std::optional<std::string> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

void CloseKeepErrno(int fd) {
  int err = errno;
  ::close(fd);
  errno = err;
}

}  // namespace

const char* const kName = "linux";
const int kSendFlags = MSG_NOSIGNAL;

int Pipe(int fds[2], bool nonblock) {
  return ::pipe2(fds, O_CLOEXEC | (nonblock ? O_NONBLOCK : 0)) == 0 ? 0 : errno;
}

int Socket(int domain, int type, bool nonblock) {
  return ::socket(domain, type | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
}

int RenameNoReplace(int dir_fd, const char* from, const char* to) {
  if (::renameat2(dir_fd, from, dir_fd, to, RENAME_NOREPLACE) == 0) return 0;
  return errno == EINVAL ? ENOSYS : errno;
}

ssize_t CopyRange(int from, int64_t* offset, int to, size_t n) {
  off64_t in = *offset;
  ssize_t c = ::copy_file_range(from, &in, to, nullptr, n, 0);
  if (c > 0) *offset = in;
  return c;
}

int64_t ModifiedNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000 + st.st_mtim.tv_nsec;
}

int64_t ChangedNs(const struct stat& st) {
  return static_cast<int64_t>(st.st_ctim.tv_sec) * 1000000000 + st.st_ctim.tv_nsec;
}

std::optional<int64_t> BirthTime(int fd) {
  struct statx sx {};
  if (::statx(fd, "", AT_EMPTY_PATH, STATX_BTIME, &sx) == 0 && (sx.stx_mask & STATX_BTIME) != 0) {
    return sx.stx_btime.tv_sec;
  }
  return std::nullopt;
}

// getdents64 straight into a buffer: no DIR* and no second descriptor per directory, which
// matters when most directories hold a few files.
DirReader::DirReader(int fd) : fd_(fd) {}
DirReader::~DirReader() { (void)dir_; }  // macOS's DIR*: none here

std::optional<DirReader::Entry> DirReader::Next() {
  struct LinuxDirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[1];
  };
  if (pos_ >= size_) {
    size_ = ::syscall(SYS_getdents64, fd_, buf_, sizeof buf_);
    pos_ = 0;
    if (size_ <= 0) return std::nullopt;
  }
  auto* e = reinterpret_cast<LinuxDirent64*>(buf_ + pos_);
  pos_ += e->d_reclen;
  return Entry{static_cast<const char*>(e->d_name), e->d_type};
}

std::string ExecutablePath() {
  char buf[PATH_MAX];
  ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return "";
  return std::string(buf, static_cast<size_t>(n));
}

std::optional<ProcessInfo> Process(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  // "pid (name) state ... starttime ...": the name (comm) may hold spaces and parentheses, so
  // it ends at the last ')'; starttime is field 22 of the line, the 20th after the state.
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat) return std::nullopt;
  auto open = stat->find('('), close = stat->rfind(')');
  if (open == std::string::npos || close == std::string::npos || close < open ||
      close + 2 >= stat->size()) {
    return std::nullopt;
  }
  ProcessInfo p;
  p.name = stat->substr(open + 1, close - open - 1);
  char state = (*stat)[close + 2];
  p.ended = state == 'Z' || state == 'X';
  std::istringstream fields(stat->substr(close + 2));
  std::string f;
  for (int i = 0; i < 20 && fields >> f; ++i) {
  }
  if (fields) p.start = std::strtoull(f.c_str(), nullptr, 10);
  return p;
}

std::vector<std::string> ProcessArgs(pid_t pid) {
  std::vector<std::string> argv;
  auto text = ReadFile("/proc/" + std::to_string(pid) + "/cmdline");
  if (!text) return argv;
  for (size_t at = 0; at < text->size();) {
    size_t end = text->find('\0', at);
    if (end == std::string::npos) end = text->size();
    argv.push_back(text->substr(at, end - at));
    at = end + 1;
  }
  return argv;
}

std::vector<pid_t> Processes() {
  std::vector<pid_t> pids;
  DIR* d = ::opendir("/proc");
  if (d == nullptr) return pids;
  while (dirent* e = ::readdir(d)) {
    int pid = std::atoi(e->d_name);
    if (pid > 0) pids.push_back(pid);
  }
  ::closedir(d);
  return pids;
}

int SignalOnParentDeath(int sig) { return ::prctl(PR_SET_PDEATHSIG, sig) == 0 ? 0 : errno; }

int AdoptOrphans() { return ::prctl(PR_SET_CHILD_SUBREAPER, 1) == 0 ? 0 : errno; }

int64_t MemoryBytes() {
  std::ifstream in("/proc/meminfo");
  std::string key, unit;
  int64_t kb = 0;
  while (in >> key >> kb >> unit) {
    if (key == "MemTotal:") return kb * 1024;
  }
  return static_cast<int64_t>(::sysconf(_SC_PHYS_PAGES)) * ::sysconf(_SC_PAGESIZE);
}

uint64_t MappedIds() {
  std::ifstream in("/proc/self/uid_map");
  uint64_t inside = 0, outside = 0, count = 0, top = 0;
  while (in >> inside >> outside >> count) top = std::max(top, inside + count);
  return top == 0 ? 4294967295u : top;
}

Accel DetectAccel(const std::string& root) {
  const std::string tcg = "TCG, software emulation (about 10x slower): ";
  struct stat st {};
  if (::stat((root + "/dev/kvm").c_str(), &st) != 0) {
    return {"tcg",
            tcg + "no /dev/kvm (no hardware virtualization, or the kvm module is not loaded)"};
  }
  if (::stat((root + "/sys/module/kvm_pvm").c_str(), &st) == 0 && S_ISDIR(st.st_mode)) {
    return {"tcg", tcg +
                       "/dev/kvm is kvm_pvm, which runs only guest kernels built for PVM, and "
                       "the CPU exposes no VMX/SVM"};
  }
  std::istringstream cpuinfo(ReadFile(root + "/proc/cpuinfo").value_or(""));
  bool vmx = false;
  for (std::string line; std::getline(cpuinfo, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(std::min(line.size(), line.find(':') + 1)));
    for (std::string flag; words >> flag;) vmx = vmx || flag == "vmx" || flag == "svm";
  }
  if (!vmx) return {"tcg", tcg + "the CPU exposes no VMX/SVM"};
  if (::access((root + "/dev/kvm").c_str(), R_OK | W_OK) != 0) {
    return {"tcg", tcg + "no access to /dev/kvm (join the kvm group)"};
  }
  return {"kvm", "KVM (hardware virtualization)"};
}

MacHost Mac() { return {}; }

int PrivateMounts(int& previous) {
  previous = ::open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
  if (previous < 0) return errno;
  if (::unshare(CLONE_NEWNS) != 0) {
    int err = errno;
    ::close(previous);
    previous = -1;
    return err;
  }
  return ::syscall(SYS_mount, nullptr, "/", nullptr, MS_REC | MS_SLAVE, nullptr) == 0 ? 0 : errno;
}

int ReturnToMounts(int previous) {
  int err = ::setns(previous, CLONE_NEWNS) == 0 ? 0 : errno;
  ::close(previous);
  return err;
}

int MountChrootSystem(const std::string& root, std::vector<std::string>& mounted,
                      std::string& failed) {
  struct Spec {
    const char* source;
    const char* dir;
    const char* type;
    unsigned long flags;
  };
  for (const Spec& m : {Spec{"proc", "/proc", "proc", 0}, Spec{"sysfs", "/sys", "sysfs", 0},
                        Spec{"/dev", "/dev", nullptr, MS_BIND | MS_REC}}) {
    std::string target = root + m.dir;
    if (::syscall(SYS_mount, m.source, target.c_str(), m.type, m.flags, nullptr) != 0) {
      failed = std::string(m.source) + " on " + target;
      return errno;
    }
    mounted.push_back(target);
  }
  return 0;
}

bool IsMountRoot(const std::string& path) {
  struct statx sx {};
  return ::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) == 0 &&
         (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
         (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

int DetachMount(const std::string& path) {
  constexpr int kDetachNoFollow = 2 | 8;  // MNT_DETACH | UMOUNT_NOFOLLOW
  return ::syscall(SYS_umount2, path.c_str(), kDetachNoFollow) == 0 ? 0 : errno;
}

std::string FileSystemName(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return "unknown";
  switch (fs.f_type) {
    case 0x6969:
      return "nfs";
    case 0xFF534D42:
      return "cifs";
    case 0x65735546:
      return "fuse";
    default: {
      std::ostringstream s;
      s << "0x" << std::hex << fs.f_type;
      return s.str();
    }
  }
}

// A child makes the namespace and waits, holding it, until we have written its maps and opened
// it; it ends when its pipe closes.
UserNamespace MakeUserNamespace(const std::string& uid_map, const std::string& gid_map) {
  UserNamespace ns;
  int ready[2], done[2];
  if (Pipe(ready) != 0) {
    ns.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    return ns;
  }
  if (Pipe(done) != 0) {
    ns.error = std::string("cannot create a pipe: ") + std::strerror(errno);
    ::close(ready[0]);
    ::close(ready[1]);
    return ns;
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    ::close(done[1]);  // so that the parent's close is the end of the pipe
    char c = ::unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1 || ::read(done[0], &c, 1) < 0) ::_exit(1);
    ::_exit(0);
  }
  int fork_errno = errno;
  ::close(ready[1]);
  ::close(done[0]);
  auto reap = [&] {
    ::close(done[1]);
    ::close(ready[0]);
    int st;
    while (pid > 0 && ::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  };
  if (pid < 0) {
    reap();
    ns.error = std::string("cannot fork: ") + std::strerror(fork_errno);
    return ns;
  }
  char c = 'n';
  if (::read(ready[0], &c, 1) != 1 || c != 'y') {
    reap();
    ns.refused = true;
    return ns;
  }
  const std::string proc = "/proc/" + std::to_string(pid) + "/";
  for (const auto& [file, lines] : {std::pair{"uid_map", uid_map}, std::pair{"gid_map", gid_map}}) {
    std::string path = proc + file;
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    bool ok = fd >= 0 && ::write(fd, lines.data(), lines.size()) == ssize_t(lines.size());
    if (!ok) ns.error = "cannot write " + path + ": " + std::strerror(errno);
    if (fd >= 0) ::close(fd);
    if (!ok) break;
  }
  if (ns.error.empty()) {
    ns.fd = ::open((proc + "ns/user").c_str(), O_RDONLY | O_CLOEXEC);
    if (ns.fd < 0) ns.error = std::string("cannot open the namespace: ") + std::strerror(errno);
  }
  reap();
  return ns;
}

MountResult MountIdmapped(const std::string& source, int userns_fd, const std::string& target) {
  int tree = static_cast<int>(
      ::syscall(SYS_open_tree, AT_FDCWD, source.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC));
  if (tree < 0) return {errno, MountResult::Stage::kOpen};
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  attr.userns_fd = static_cast<uint64_t>(userns_fd);
  if (::syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    CloseKeepErrno(tree);
    return {errno, MountResult::Stage::kMap};
  }
  if (::syscall(SYS_move_mount, tree, "", AT_FDCWD, target.c_str(), MOVE_MOUNT_F_EMPTY_PATH) != 0) {
    CloseKeepErrno(tree);
    return {errno, MountResult::Stage::kMove};
  }
  ::close(tree);
  return {};
}

std::optional<sockaddr_storage> OriginalDestination(int fd, bool ipv6) {
  sockaddr_storage ss{};
  socklen_t length = sizeof ss;
  int rc = ipv6 ? ::getsockopt(fd, SOL_IPV6, IP6T_SO_ORIGINAL_DST, &ss, &length)
                : ::getsockopt(fd, SOL_IP, SO_ORIGINAL_DST, &ss, &length);
  if (rc != 0) return std::nullopt;
  return ss;
}

int OpenAddressWatch() {
  int fd = ::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_ROUTE);
  if (fd < 0) return -1;
  sockaddr_nl at{};
  at.nl_family = AF_NETLINK;
  at.nl_groups = RTMGRP_LINK | RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&at), sizeof at) != 0) {
    int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

int DrainAddressWatch(int fd) {
  // The notices are sent while the change is made, before the call that made it returns: what
  // changed before this call is read by it.
  int changed = 0;
  char buf[8192];
  for (;;) {
    ssize_t n = ::recv(fd, buf, sizeof buf, MSG_DONTWAIT);
    if (n > 0) {
      changed = 1;
    } else if (n < 0 && errno == ENOBUFS) {
      changed = 1;  // notices were lost: something changed
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return changed;
    } else {
      if (n == 0) errno = EPIPE;
      return -1;
    }
  }
}

int OpenToLook(int dir_fd, const char* name, bool folder) {
  return ::openat(dir_fd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC | (folder ? O_DIRECTORY : 0));
}

// Through the descriptor's name in /proc: fchmod refuses an O_PATH descriptor.
int ChangeModeBits(int fd, mode_t add, mode_t remove) {
  struct stat st;
  if (::fstat(fd, &st) != 0) return -1;
  std::string at = "/proc/self/fd/" + std::to_string(fd);
  return ::chmod(at.c_str(), ((st.st_mode & 07777) | add) & ~remove);
}

bool HasFileCapabilities(int dir_fd, const char* name) {
  std::string at = "/proc/self/fd/" + std::to_string(dir_fd) + "/" + name;
  return ::lgetxattr(at.c_str(), "security.capability", nullptr, 0) >= 0;
}

int TakeOffFileCapabilities(int fd) {
  std::string at = "/proc/self/fd/" + std::to_string(fd);
  if (::removexattr(at.c_str(), "security.capability") == 0 || errno == ENODATA) return 0;
  return -1;
}

int OpenFolderWatch() { return ::inotify_init1(IN_NONBLOCK | IN_CLOEXEC); }

// Through the descriptor: a path could be changed under the caller into a link to elsewhere.
int AddFolderWatch(int watch_fd, int dir_fd) {
  std::string at = "/proc/self/fd/" + std::to_string(dir_fd);
  return ::inotify_add_watch(watch_fd, at.c_str(),
                             IN_CREATE | IN_MOVED_TO | IN_MOVED_FROM | IN_DELETE | IN_CLOSE_WRITE |
                                 IN_ATTRIB | IN_DELETE_SELF | IN_ONLYDIR | IN_EXCL_UNLINK);
}

int AddFileWatch(int watch_fd, int fd) {
  std::string at = "/proc/self/fd/" + std::to_string(fd);
  return ::inotify_add_watch(watch_fd, at.c_str(),
                             IN_MODIFY | IN_ATTRIB | IN_CLOSE_WRITE | IN_DELETE_SELF);
}

void RemoveFolderWatch(int watch_fd, int watch) { ::inotify_rm_watch(watch_fd, watch); }

int ReadFolderEvents(int watch_fd, std::vector<FolderEvent>& events) {
  alignas(struct inotify_event) char buf[65536];
  for (;;) {
    ssize_t n = ::read(watch_fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return 0;
    if (n <= 0) return -1;
    for (ssize_t at = 0; at + static_cast<ssize_t>(sizeof(inotify_event)) <= n;) {
      const auto* e = reinterpret_cast<const inotify_event*>(buf + at);
      FolderEvent f;
      if (e->mask & IN_Q_OVERFLOW) {
        f.watch = -1;
      } else {
        f.watch = e->wd;
        if (e->len > 0) f.name = std::string(e->name, ::strnlen(e->name, e->len));
        f.folder = (e->mask & IN_ISDIR) != 0;
        f.arrived = (e->mask & (IN_CREATE | IN_MOVED_TO)) != 0;
        f.left = (e->mask & IN_MOVED_FROM) != 0;
        f.mode = (e->mask & IN_ATTRIB) != 0;
        f.cookie = e->cookie;
        f.gone = (e->mask & (IN_IGNORED | IN_DELETE_SELF | IN_UNMOUNT)) != 0;
      }
      events.push_back(std::move(f));
      at += static_cast<ssize_t>(sizeof(inotify_event) + e->len);
    }
  }
}

}  // namespace ss::platform
