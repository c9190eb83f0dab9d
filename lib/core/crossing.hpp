// The one way bytes from a sandbox land on the host (apply, pull). An archive the sandbox sent
// (indexed by tar_index.hpp, trusted in nothing) is written beneath a destination directory:
//
// - every name is resolved one component at a time from the destination with O_NOFOLLOW, so a
//   symbolic link on the host (one an earlier apply wrote, or a swap in between) is never
//   followed; absolute names, '..' and empty names are refused;
// - regular files are written beside their name and renamed over it, so a link or a hard link
//   already there is replaced, never written through;
// - symbolic links are written only when their target, followed through the tree as it will
//   stand (future_tree.hpp), stays inside `scope`; device nodes, fifos, sockets and hard links
//   are refused; every refusal is listed, the rest is written;
// - nothing is written in a `.git` folder (any letter case, at any depth), nor what the
//   exclusion rules name (exclude_rules.hpp): the host decides, whatever the sandbox's rsync
//   listed;
// - setuid, setgid and sticky bits are dropped and the user's umask applies (for apply, only the
//   executable bit comes from the sandbox); under root, what is written is given to the
//   destination's owner;
// - sparse files (tar_index.hpp) are written sparse: their holes take no space on the host;
// - nothing is created above the destination: the caller names an existing directory.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "exclude_rules.hpp"
#include "fd.hpp"
#include "tar_index.hpp"

namespace ss {

struct CrossingOptions {
  // Entries whose first component is rename_from are written under rename_to instead (a pulled
  // file or directory taking the name the user gave it); others are refused.
  std::optional<std::string> rename_from, rename_to;
  // When set, only these paths are written (what apply asked for); others are refused.
  const std::set<std::string>* only = nullptr;
  // How many leading components a symbolic link may not climb out of: 0 keeps links inside the
  // destination, 1 inside the top directory written (a pulled tree).
  int scope_depth = 0;
  // Paths refused besides '.git' (sync.exclude for apply); none when null.
  const ExcludeRules* exclude = nullptr;
  // Modes decided on the host from the executable bit alone (apply): an existing file keeps its
  // mode but for its x bits; a new one gets 0666 less the umask, less the group and other bits
  // the sandbox's mode lacks (it may narrow, never widen); executable means x wherever r is.
  // Otherwise (pull) the sandbox's permission bits less setuid, setgid, sticky and umask.
  bool exec_bit_only = false;
};

struct Refusal {
  std::string path;  // as the archive named it
  std::string why;   // "a symbolic link to '/etc' (outside the project)"
};

struct CrossingReport {
  std::vector<std::string> written;  // paths below the destination, after renaming
  std::vector<Refusal> refused;
  int64_t bytes = 0;  // file data written
};

// Writes the entries of the archive in `archive_fd` beneath the existing directory `dest`.
// Throws ss::Error(74) when the host refuses a write, 66 when `dest` does not exist.
CrossingReport CrossInto(int archive_fd, const std::vector<TarEntry>& entries,
                         const std::string& dest, const CrossingOptions& options);

// Removes the file (or symbolic link) `path` below `dest` without following any link on the
// way; a directory is left alone. False when it was not there.
bool RemoveBeneath(const std::string& dest, const std::string& path);

// The directory holding the last of `parts` beneath the open directory `root`, every component
// opened without following a link; invalid when one is missing, a link or not a directory
// (errno says which: ENOENT, ELOOP or ENOTDIR).
Fd OpenParentBeneath(int root, const std::vector<std::string>& parts);

// The components of a name from the sandbox, or nullopt when it is absolute, has '..' or a NUL,
// or names nothing ("./" and "." components are dropped).
std::optional<std::vector<std::string>> SafeComponents(const std::string& path);

}  // namespace ss
