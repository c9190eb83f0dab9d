#include "idmap_view.hpp"

// The new mount API comes from the kernel's header; glibc's <sys/mount.h> clashes with it.
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "digest.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "json_out.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr const char* kRoot = "/run/ss-views";
constexpr uint32_t kNobody = 65534;

bool IsMountRoot(const std::string& path) {
  struct statx sx {};
  return ::statx(AT_FDCWD, path.c_str(), AT_SYMLINK_NOFOLLOW, STATX_BASIC_STATS, &sx) == 0 &&
         (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
         (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

void Unmount(const std::string& path) {
  // Detached at once (MNT_DETACH | UMOUNT_NOFOLLOW, from <sys/mount.h>, which cannot be
  // included here); sandboxes that hold a copy of it keep theirs until they stop.
  constexpr int kDetachNoFollow = 2 | 8;
  while (IsMountRoot(path) && ::syscall(SYS_umount2, path.c_str(), kDetachNoFollow) == 0) {
  }
}

// A user namespace whose ids map `owner` (as the id inside) to `shown` (outside), held by a
// child that waits until we have opened it. Returns the namespace's descriptor.
int MappingNamespace(Ids owner, Ids shown, bool root_as_nobody) {
  int ready[2], done[2];
  if (::pipe2(ready, O_CLOEXEC) != 0 || ::pipe2(done, O_CLOEXEC) != 0) {
    throw Error(kExitSoftware, Cat("cannot create a pipe: ", std::strerror(errno)));
  }
  pid_t pid = ::fork();
  if (pid == 0) {
    ::close(ready[0]);
    ::close(done[1]);  // so that the parent's close is the end of the pipe
    char c = ::unshare(CLONE_NEWUSER) == 0 ? 'y' : 'n';
    if (::write(ready[1], &c, 1) != 1 || ::read(done[0], &c, 1) < 0) ::_exit(1);
    ::_exit(0);
  }
  ::close(ready[1]);
  ::close(done[0]);
  Fd ready_r(ready[0]);
  int done_w = done[1];
  // The child ends when its pipe closes.
  auto reap = [pid, done_w] {
    ::close(done_w);
    int st;
    while (pid > 0 && ::waitpid(pid, &st, 0) < 0 && errno == EINTR) {
    }
  };
  if (pid < 0) {
    reap();
    throw Error(kExitSoftware, Cat("cannot fork: ", std::strerror(errno)));
  }
  char c = 'n';
  if (::read(ready_r.get(), &c, 1) != 1 || c != 'y') {
    reap();
    throw Error(kExitUnavailable, "cannot share a folder through an id-mapped view",
                {"  the kernel refused a user namespace (unshare CLONE_NEWUSER)"});
  }
  std::string error;
  std::string uid_map = Cat(owner.uid, " ", shown.uid, " 1\n");
  std::string gid_map = Cat(owner.gid, " ", shown.gid, " 1\n");
  if (root_as_nobody) {
    uid_map += Cat(kNobody, " 0 1\n");
    gid_map += Cat(kNobody, " 0 1\n");
  }
  for (const auto& [file, line] : {std::pair{"uid_map", uid_map}, std::pair{"gid_map", gid_map}}) {
    std::string path = Cat("/proc/", pid, "/", file);
    Fd fd(::open(path.c_str(), O_WRONLY | O_CLOEXEC));
    if (fd.get() < 0 || ::write(fd.get(), line.data(), line.size()) != ssize_t(line.size())) {
      error = Cat("cannot write ", path, ": ", std::strerror(errno));
      break;
    }
  }
  int ns =
      error.empty() ? ::open(Cat("/proc/", pid, "/ns/user").c_str(), O_RDONLY | O_CLOEXEC) : -1;
  if (error.empty() && ns < 0) error = Cat("cannot open the namespace: ", std::strerror(errno));
  reap();
  if (!error.empty()) throw Error(kExitUnavailable, "cannot make an id-mapped view", {error});
  return ns;
}

std::string FsName(const std::string& path) {
  struct statfs fs {};
  if (::statfs(path.c_str(), &fs) != 0) return "unknown";
  switch (fs.f_type) {
    case 0x6969:
      return "nfs";
    case 0xFF534D42:
      return "cifs";
    case 0x65735546:
      return "fuse";
    default:
      return Cat("0x", std::hex, fs.f_type);
  }
}

Json Record(const std::string& source, Ids owner, Ids shown, bool root_as_nobody) {
  return {{"source", source},
          {"owner", {owner.uid, owner.gid}},
          {"shown", {shown.uid, shown.gid}},
          {"root_as_nobody", root_as_nobody}};
}

}  // namespace

std::string ViewsDir(std::string_view identity) {
  return Cat(kRoot, "/", Sha256Hex(identity).substr(0, 16));
}

void EnsureView(const std::string& source, const std::string& view, Ids owner, Ids shown,
                bool root_as_nobody) {
  std::string record_path = view + ".json";
  Json wanted = Record(source, owner, shown, root_as_nobody);
  if (root_as_nobody && (owner.uid == kNobody || owner.gid == kNobody)) {
    throw Error(kExitUnavailable, Cat("cannot share ", source, ": it belongs to nobody (", kNobody,
                                      "), whose id the view keeps for root"));
  }
  if (IsMountRoot(view)) {
    auto text = ReadFileIfExists(record_path);
    if (text && Json::parse(*text, nullptr, false) == wanted) return;
    Unmount(view);
  }
  if (::geteuid() != 0) {
    throw Error(kExitNoPerm, Cat("sharing ", source, " with the sandbox needs root"),
                {Cat("  its files belong to uid ", owner.uid,
                     " and appear as the sandbox user's through a view only root can mount")},
                {"run the command with sudo"});
  }
  MakeDirs(kRoot, 0700);
  ::chmod(kRoot, 0700);
  MakeDirs(Dirname(view), 0700);
  MakeDirs(view, 0700);
  Fd ns(MappingNamespace(owner, shown, root_as_nobody));
  Fd tree(static_cast<int>(
      ::syscall(SYS_open_tree, AT_FDCWD, source.c_str(), OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC)));
  if (tree.get() < 0) {
    throw Error(kExitUnavailable, Cat("cannot share ", source, ": ", std::strerror(errno)));
  }
  mount_attr attr{};
  attr.attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
  attr.userns_fd = static_cast<uint64_t>(ns.get());
  if (::syscall(SYS_mount_setattr, tree.get(), "", AT_EMPTY_PATH, &attr, sizeof attr) != 0) {
    int err = errno;
    if (err == ENOSYS) {
      throw Error(kExitUnavailable, Cat("cannot share ", source, " with the sandbox's user"),
                  {"  this kernel has no id-mapped mounts (Linux 5.12 or newer has)"});
    }
    if (err == EPERM && InUserNamespace()) {
      // Only the user namespace that mounted a filesystem may map its ids: not a container's.
      throw Error(kExitNoPerm, Cat("cannot share ", source, " with the sandbox's user"),
                  {Cat("  ss runs in a container, where root cannot mount its files with mapped "
                       "ids, and they belong to uid ",
                       owner.uid, ", not the sandbox user's ", shown.uid)},
                  {"run ss as a regular user (with sudo for its set-up), whose files need no "
                   "mapping"});
    }
    throw Error(kExitUnavailable, Cat("cannot share ", source, " with the sandbox's user"),
                {Cat("  its filesystem (", FsName(source),
                     ") cannot be mounted with mapped ids: ", std::strerror(err))},
                {"keep the folder on a local filesystem (ext4, btrfs, xfs, tmpfs)"});
  }
  if (::syscall(SYS_move_mount, tree.get(), "", AT_FDCWD, view.c_str(), MOVE_MOUNT_F_EMPTY_PATH) !=
      0) {
    throw Error(kExitUnavailable,
                Cat("cannot mount the view of ", source, " at ", view, ": ", std::strerror(errno)));
  }
  AtomicWrite(record_path, DumpJson(wanted) + "\n", 0600);
}

void RemoveViews(const std::string& dir) {
  if (!IsDirectory(dir)) return;
  for (const auto& name : ListDir(dir)) {
    std::string path = Cat(dir, "/", name);
    if (IsMountRoot(path)) Unmount(path);
  }
  for (const auto& name : ListDir(dir)) {
    std::string path = Cat(dir, "/", name);
    if (IsMountRoot(path)) {
      throw Error(kExitIoErr, Cat("cannot unmount ", path, ": ", std::strerror(errno)));
    }
    // An empty mount point or a record: never a tree (never the user's files).
    if (::rmdir(path.c_str()) != 0 && ::unlink(path.c_str()) != 0 && errno != ENOENT) {
      throw Error(kExitIoErr, Cat("cannot remove ", path, ": ", std::strerror(errno)));
    }
  }
  ::rmdir(dir.c_str());
}

}  // namespace ss
