// Working-copy mode (projects.<name>.mode: copy, `ss new NAME --copy`; for a folder, `ss run DIR
// --copy`): the agent works in a writable copy on the sandbox's own disk, kept in step with a
// read-only view of the host project by `ss sync` (see sync.hpp). In the sandbox:
//
//   ~/project-src/NAME   the host project, read-only (a bind of the shared projects folder); a
//                        folder's own sandbox has the folder shared read-only there instead
//   ~/projects/NAME      the writable copy (stored in ~/.ss/copies/NAME, bound over the shared
//                        folder's entry, so every tool finds the project where it always is);
//                        a folder's copy is bound at /workspace/NAME too, where the agent works
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

#include "provision.hpp"

namespace ss {

class Config;
class SshConnection;
struct Folder;

// What a working copy is a copy of: a copy-mode project, or a copy-mode folder (folders.hpp),
// whose copy lives in the folder's own sandbox only.
struct CopySource {
  std::string name;       // the layout's NAME: the project's, or the folder's
  std::string host_dir;   // where apply writes
  std::string workspace;  // a folder's /workspace/NAME; empty for a project
  std::string word;       // how commands name it: the project, or the folder's path (quoted)
  bool folder() const { return !workspace.empty(); }
};
CopySource ProjectCopy(const std::string& project);
CopySource FolderCopy(const Folder& folder);

// The sources whose working copies live in `sandbox`: the folder's when it is a copy-mode
// folder's own sandbox (nothing for another folder's), else every copy-mode project.
std::vector<CopySource> CopySourcesIn(const Config& config, const std::string& sandbox);
// Whether any sandbox may hold a working copy: a copy-mode project or folder exists.
bool AnyCopySources(const Config& config);
// `source`, when its copy lives in `sandbox`; else ss::Error(64) saying where it lives.
void RequireCopyIn(const Config& config, const CopySource& source, const std::string& sandbox);

std::string SourceDir(const std::string& project);  // /home/sandbox/project-src/NAME
std::string CopyDir(const std::string& project);    // /home/sandbox/projects/NAME
std::string CopyStore(const std::string& project);  // /home/sandbox/.ss/copies/NAME
std::string SyncStamp(const std::string& project);  // /home/sandbox/.ss/sync/NAME.stamp

// True when the project is in working-copy mode (projects.<name>.mode: copy).
bool IsCopyMode(const Config& config, const std::string& project);

// Installs /etc/ss/sync-exclude when it changed and, for a `source` with a name, makes the
// working-copy layout above (the first time, the copy is filled from the source, and its base
// recorded for `sandbox`: apply_base.hpp). Returns true when the copy was created now. Throws
// ss::Error(69) when the sandbox cannot mount.
bool PrepareWorkingCopy(SshConnection& conn, const Config& config, const CopySource& source,
                        const std::string& sandbox);

}  // namespace ss
