#include "idmap_view.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "digest.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "json_out.hpp"
#include "platform.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr const char* kRoot = "/run/ss-views";
constexpr uint32_t kNobody = 65534;

using platform::IsMountRoot;

void Unmount(const std::string& path) {
  // Detached at once; sandboxes that hold a copy of it keep theirs until they stop.
  while (IsMountRoot(path) && platform::DetachMount(path) == 0) {
  }
}

// A user namespace whose ids map `owner` (as the id inside) to `shown` (outside). Returns the
// namespace's descriptor.
int MappingNamespace(Ids owner, Ids shown, bool root_as_nobody) {
  std::string uid_map = Cat(owner.uid, " ", shown.uid, " 1\n");
  std::string gid_map = Cat(owner.gid, " ", shown.gid, " 1\n");
  if (root_as_nobody) {
    uid_map += Cat(kNobody, " 0 1\n");
    gid_map += Cat(kNobody, " 0 1\n");
  }
  auto ns = platform::MakeUserNamespace(uid_map, gid_map);
  if (ns.refused) {
    throw Error(kExitUnavailable, "cannot share a folder through an id-mapped view",
                {"  the kernel refused a user namespace (unshare CLONE_NEWUSER)"});
  }
  if (ns.fd < 0) throw Error(kExitUnavailable, "cannot make an id-mapped view", {ns.error});
  return ns.fd;
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
  auto mounted = platform::MountIdmapped(source, ns.get(), view);
  int err = mounted.err;
  if (mounted.stage == platform::MountResult::Stage::kOpen) {
    throw Error(kExitUnavailable, Cat("cannot share ", source, ": ", std::strerror(err)));
  }
  if (mounted.stage == platform::MountResult::Stage::kMap) {
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
                {Cat("  its filesystem (", platform::FileSystemName(source),
                     ") cannot be mounted with mapped ids: ", std::strerror(err))},
                {"keep the folder on a local filesystem (ext4, btrfs, xfs, tmpfs)"});
  }
  if (err != 0) {
    throw Error(kExitUnavailable,
                Cat("cannot mount the view of ", source, " at ", view, ": ", std::strerror(err)));
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
