// Views of the user's folders for sandboxes that cannot map ids themselves: an idmapped bind
// mount (Linux 5.12+) of the folder in which its owner's files appear as the sandbox user's host
// id, and in which every file the sandbox user makes belongs, on the host, to the owner. No
// other id is mapped: nothing else the sandbox does can write there (root inside gets
// EOVERFLOW), and no setuid or device file in it takes effect (nosuid, nodev).
//
// Docker, Podman and QEMU's virtiofsd run the sandbox user as host uid 1000; LXD runs it as an
// id of the container's own range. A view lets each of them share a folder owned by any user,
// root included, without giving the sandbox that user's identity anywhere else.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

namespace ss {

struct Ids {
  uid_t uid = 0;
  gid_t gid = 0;
  bool operator==(const Ids&) const = default;
};

// The folder holding one sandbox's views, named after `identity` (unique on this host: the
// engine and the container's name, or a QEMU machine's folder). Root's alone (0700).
std::string ViewsDir(std::string_view identity);

// Mounts at `view` a view of `source` in which `owner`'s files appear as `shown`'s; a view
// already there of the same source and ids is kept, another is replaced. With `root_as_nobody`,
// host root's writes are stored as nobody's (65534) as well: for a server that renames and links
// as root on its guest's behalf (QEMU's virtiofsd), which a view without root cannot serve.
// Needs root; throws ss::Error 77 without it, 69 where the kernel or the folder's filesystem
// cannot.
void EnsureView(const std::string& source, const std::string& view, Ids owner, Ids shown,
                bool root_as_nobody = false);

// Unmounts every view under `dir` and removes it.
void RemoveViews(const std::string& dir);

}  // namespace ss
