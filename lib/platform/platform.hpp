// What differs between the systems ss runs on (Linux, macOS): every call to a system interface
// that only one of them has is here, in platform_linux.cpp or platform_darwin.cpp (CMake builds
// the host's), and nowhere else. Everything above this layer is POSIX and standard C++.
//
// This layer is the lowest: it uses only the C library and the standard library. Calls answer
// with a value or an errno (0 for success); the layers above turn those into ss's errors.
// Where a system has no such thing, the call answers ENOSYS (or says so in its type).
#pragma once

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace ss::platform {

// "linux" or "macos".
extern const char* const kName;

// --- Files and descriptors ---

// pipe(2) with both ends close-on-exec (and non-blocking when asked). Returns 0 or errno.
int Pipe(int fds[2], bool nonblock = false);
// socket(2), close-on-exec (and non-blocking when asked), never raising SIGPIPE on a write to a
// closed peer. Returns the descriptor or -1 with errno set.
int Socket(int domain, int type, bool nonblock = false);
// Flags for send(2) and sendmsg(2) on such a socket (MSG_NOSIGNAL where it exists).
extern const int kSendFlags;

// Renames `from` to `to` in the folder `dir_fd` unless `to` exists, in one step: 0, EEXIST (or
// ENOTEMPTY) when taken, ENOSYS when the system or its file system cannot do it in one step (the
// caller then checks and renames under a lock), another errno otherwise.
int RenameNoReplace(int dir_fd, const char* from, const char* to);

// Copies up to `n` bytes from `from` at `*offset` (advanced) to `to` at its position, inside the
// kernel. Returns the bytes copied, or -1 with errno set; ENOSYS, EXDEV, EINVAL and EOPNOTSUPP
// mean "copy it yourself".
ssize_t CopyRange(int from, int64_t* offset, int to, size_t n);

// A stat's modification and change times, in nanoseconds since the epoch (the fields' names
// differ: st_mtim on Linux, st_mtimespec on macOS).
int64_t ModifiedNs(const struct stat& st);
int64_t ChangedNs(const struct stat& st);

// When the open file was created (seconds since the epoch), where the file system records it.
std::optional<int64_t> BirthTime(int fd);

// Reads the entries of an open directory from its current offset, without a second descriptor
// where the system allows. `fd` stays open and the caller's.
class DirReader {
 public:
  struct Entry {
    const char* name;
    unsigned char type;  // DT_* (DT_UNKNOWN when the file system does not say)
  };
  explicit DirReader(int fd);
  ~DirReader();
  DirReader(const DirReader&) = delete;
  DirReader& operator=(const DirReader&) = delete;
  // The next entry, "." and ".." included; std::nullopt at the end or on an error.
  std::optional<Entry> Next();

 private:
  int fd_;
  void* dir_ = nullptr;  // macOS: a DIR* over a duplicate of fd
  alignas(8) char buf_[32 * 1024];
  long size_ = 0, pos_ = 0;
};

// --- Processes ---

// The running program's own file (resolved), or "" if the system will not say.
std::string ExecutablePath();

struct ProcessInfo {
  std::string name;    // the command's name as the kernel keeps it (15 or 16 bytes at most)
  uint64_t start = 0;  // when it started, in the system's units: compare, never convert
  bool ended = false;  // a zombie (or dead) waiting to be reaped
};
// A live or zombie process, or std::nullopt when there is none with that id.
std::optional<ProcessInfo> Process(pid_t pid);
// Its argument vector, or empty when it is gone or not ours to read.
std::vector<std::string> ProcessArgs(pid_t pid);
// Every process id the system shows this user.
std::vector<pid_t> Processes();

// In a child: the signal it gets when its parent dies (nothing happens where the system cannot:
// the parent then stops its children itself). Returns 0 or errno.
int SignalOnParentDeath(int sig);
// Orphans among this process's descendants are given to it, not to init, so it can reap them
// (Linux's child subreaper). Returns 0 or errno (ENOSYS elsewhere).
int AdoptOrphans();

// --- The host ---

int64_t MemoryBytes();  // bytes of RAM
// How many user ids this process's user namespace maps (one past the highest id inside):
// 4294967295 at the top level and where there are no user namespaces.
uint64_t MappedIds();

// How the host can run virtual machines, and why.
struct Accel {
  std::string kind;    // "kvm", "hvf" or "tcg"
  std::string reason;  // "KVM (hardware virtualization)", "TCG: the CPU exposes no VMX/SVM"
  bool hardware() const { return kind != "tcg"; }
};
// Linux: KVM only when hardware virtualization actually works (/dev/kvm usable, the CPU exposing
// VMX or SVM, and not a PVM-only /dev/kvm, which runs only guests built for PVM). macOS: HVF when
// the Hypervisor framework is supported. `root` prefixes /proc, /sys and /dev (tests point it at
// a fake tree; ignored on macOS).
Accel DetectAccel(const std::string& root = "");

// macOS facts a Lume or Lima sandbox depends on; on Linux, `is_macos` is false and the rest empty.
struct MacHost {
  bool is_macos = false;
  bool apple_silicon = false;   // hw.optional.arm64
  bool virtualization = false;  // kern.hv_support: Virtualization.framework can run VMs
  std::string version;          // kern.osproductversion, "15.1"
};
MacHost Mac();

// --- Mounts (Linux; every call answers ENOSYS elsewhere) ---

// Moves this process into a mount namespace of its own, receiving the host's later mounts
// (slave): however it ends, its own mounts are never left in the host's. `previous` receives a
// descriptor of the namespace it left, for ReturnToMounts.
int PrivateMounts(int& previous);
// Back into the mount namespace `previous` (from PrivateMounts), which it closes: what the
// process mounts next (a sandbox's views) is the host's again. Single-threaded callers only.
int ReturnToMounts(int previous);
// Linux's own file systems in the new root `root`, for the programs run there (chroot): /proc,
// /sys, and the host's /dev, recursively (in a container /dev is a tmpfs of bind-mounted nodes,
// which a plain bind leaves behind as unusable placeholders). The folders exist already. Each
// mount made is added to `mounted`; returns 0, or errno with `failed` saying which.
int MountChrootSystem(const std::string& root, std::vector<std::string>& mounted,
                      std::string& failed);
// Whether `path` is the root of a mount (not following a final link).
bool IsMountRoot(const std::string& path);
// Detaches the mount at `path` (not following a final link). Returns 0 or errno.
int DetachMount(const std::string& path);
// The file system `path` is on: "nfs", "cifs", "fuse", or its magic number in hex.
std::string FileSystemName(const std::string& path);

// A user namespace mapping the given lines ("inside outside count\n"...) for users and groups,
// held open by a descriptor. `refused` says the kernel would not make one at all; otherwise
// `error` says what failed.
struct UserNamespace {
  int fd = -1;
  bool refused = false;
  std::string error;
};
UserNamespace MakeUserNamespace(const std::string& uid_map, const std::string& gid_map);

// Mounts `source` at `target` with its ids mapped through the user namespace `userns_fd`,
// without set-user-id files or devices. `stage` is the step that failed: opening the source,
// mapping the ids (ENOSYS there: the kernel has no id-mapped mounts), moving it onto `target`.
struct MountResult {
  enum class Stage { kNone, kOpen, kMap, kMove };
  int err = 0;
  Stage stage = Stage::kNone;
};
MountResult MountIdmapped(const std::string& source, int userns_fd, const std::string& target);

// --- Networking ---

// The destination a connection had before the firewall redirected it to us (a transparent
// proxy's), or std::nullopt when it was not redirected or the system cannot say.
std::optional<sockaddr_storage> OriginalDestination(int fd, bool ipv6);

// A non-blocking, close-on-exec descriptor that the kernel writes to whenever an address or a
// link of the host's interfaces is added, removed or changed (Linux: an rtnetlink socket), so
// its reader knows to read them again. Returns the descriptor, or -1 with errno set (ENOSYS
// where the system has none: then read them every time).
int OpenAddressWatch();
// Reads everything waiting on such a descriptor: 1 when anything changed since the last call (or
// so much changed that the kernel dropped notices), 0 when nothing did, -1 with errno set when it
// cannot tell.
int DrainAddressWatch(int fd);

// --- Watching folders ---

// Opens `name` of `dir_fd` only to be looked at: fstat, a watch, and for a folder openat beneath
// it, which needs only the right to search it (Linux: O_PATH). A last link is opened itself, or
// refused (ELOOP), never followed; a special file is never opened for reading. `folder`: a
// folder or nothing (ENOTDIR). -1 with errno.
int OpenToLook(int dir_fd, const char* name, bool folder);
// Adds `add` to the permissions of what `fd` (OpenToLook's) is open on and takes `remove` off,
// whatever its name now leads to. 0, or -1 with errno.
int ChangeModeBits(int fd, mode_t add, mode_t remove);
// Whether file `name` of `dir_fd` carries file capabilities (Linux's security.capability: run, it
// gets them whoever runs it). False where the system has none.
bool HasFileCapabilities(int dir_fd, const char* name);
// Takes the file capabilities off what `fd` (OpenToLook's) is open on. 0, or -1 with errno.
int TakeOffFileCapabilities(int fd);

// A non-blocking, close-on-exec descriptor that reports what happens to the entries of the
// folders added to it (Linux: inotify), or -1 with errno (ENOSYS where the system has none).
int OpenFolderWatch();
// Adds open folder `dir_fd` to the watch: entries made, moved in or out, removed, closed after
// writing, changed in mode or times. Returns the folder's number (the same for a folder added
// twice), or -1 with errno (ENOSPC: the user's watches are all taken).
int AddFolderWatch(int watch_fd, int dir_fd);
// Adds the file `fd` is open on (OpenToLook's will do): written, changed in mode, linked,
// whatever name does it. Numbered as folders are.
int AddFileWatch(int watch_fd, int fd);
struct FolderEvent {
  int watch = -1;        // the folder's (or file's) number; -1 when the kernel dropped events
  std::string name;      // the entry; empty for the folder or file itself
  bool folder = false;   // the entry is a folder
  bool arrived = false;  // the entry was made or moved in
  bool left = false;     // the entry was moved out (`cookie` pairs it with its arrival)
  uint32_t cookie = 0;
  bool mode = false;  // the entry's (or file's) mode, times or links changed
  bool gone = false;  // the folder itself is no longer watched (removed, or its file system)
};
// Stops watching folder or file `watch` (its events stop; a last one says it is gone).
void RemoveFolderWatch(int watch_fd, int watch);
// Appends what is waiting (nothing when nothing is); -1 with errno when it cannot be read.
int ReadFolderEvents(int watch_fd, std::vector<FolderEvent>& events);

}  // namespace ss::platform
