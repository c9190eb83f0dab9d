// Working-copy mode (projects.<name>.mode: copy, or `ss new NAME --copy`): the agent works in a
// writable copy on the sandbox's own disk, kept in step with a read-only view of the host
// project by `ss sync` (see sync.hpp). In the sandbox:
//
//   ~/project-src/NAME   the host project, read-only (a bind of the shared projects folder)
//   ~/projects/NAME      the writable copy (stored in ~/.ss/copies/NAME, bound over the shared
//                        folder's entry, so every tool finds the project where it always is)
//   ~/.ss/sync/NAME.stamp  touched after each sync: what changed in the copy since is newer
//   ~/.ss/bases/NAME     what the copy was last made from (apply_base.hpp)
//
// The sync exclusion list is defined once, as sync.exclude in config.yaml, and reaches the
// sandbox as one file that every sync reads:
//
//   /etc/ss/sync-exclude   rsync --exclude-from format: one pattern per line; lines starting
//                          with '#' are comments. Mode 0644, owned by root.
//
// Provisioning installs it (cloud-init write_files) and ss rewrites it whenever sync.exclude
// changed, before any sync. `ss sync` runs rsync with --exclude-from=/etc/ss/sync-exclude, and
// the sandbox's shell functions do the same:
//
//   rsync -a --delete --exclude-from=/etc/ss/sync-exclude ~/project-src/NAME/ ~/projects/NAME/
//
// so the host command, bash and fish can never disagree about what is excluded.
#pragma once

#include <string>
#include <vector>

namespace ss {

class Config;
class SshConnection;

inline constexpr const char* kSyncExcludeFile = "/etc/ss/sync-exclude";

std::string SourceDir(const std::string& project);  // /home/sandbox/project-src/NAME
std::string CopyDir(const std::string& project);    // /home/sandbox/projects/NAME
std::string CopyStore(const std::string& project);  // /home/sandbox/.ss/copies/NAME
std::string SyncStamp(const std::string& project);  // /home/sandbox/.ss/sync/NAME.stamp

// True when the project is in working-copy mode (projects.<name>.mode: copy).
bool IsCopyMode(const Config& config, const std::string& project);

// sync.exclude, checked: ss::Error(78) for an empty pattern or one with a line break.
std::vector<std::string> SyncExcludes(const Config& config);
// The text of /etc/ss/sync-exclude for these patterns (a comment header, then one per line).
std::string RenderSyncExclude(const std::vector<std::string>& patterns);

// Installs /etc/ss/sync-exclude when it changed and, for a non-empty `project`, makes the
// working-copy layout above (the first time, the copy is filled from the source, and its base
// recorded for `sandbox`: apply_base.hpp). Returns true when the copy was created now. Throws
// ss::Error(69) when the sandbox cannot mount.
bool PrepareWorkingCopy(SshConnection& conn, const Config& config, const std::string& project,
                        const std::string& sandbox);

}  // namespace ss
