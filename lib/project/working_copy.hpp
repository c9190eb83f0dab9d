// Working-copy mode (projects.<name>.mode: copy, `ss new NAME --copy`; for a folder, `ss run DIR
// --copy`): the agent works in a writable copy on the sandbox's own disk, kept in step with the
// host's folder by `ss sync` (see sync.hpp). The host's folder is never shared with the sandbox,
// in any way: a copy-mode project lives in $SS_HOME/copy-projects/NAME, beside the projects
// folder that sandboxes share, and a copy-mode folder is shared with nothing. ss sends it. In
// the sandbox:
//
//   ~/project-src/NAME   the host's folder as ss last sent it (before every session, sync, diff
//                        and apply), owned by root: read-only to the agent, and nothing root
//                        does there reaches the host
//   ~/copy-projects/NAME the writable copy, where the agent works; a folder's is also at
//                        /workspace/NAME (a link)
//   ~/.ss/sync/NAME.stamp  touched after each sync: what changed in the copy since is newer
//   ~/.ss/bases/NAME     what the copy was last made from (apply_base.hpp)
//   ~/.ss/sources/NAME.stamp  what ss last sent (a digest of its listing)
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
//   rsync -a --delete --exclude-from=/etc/ss/sync-exclude ~/project-src/NAME/ ~/copy-projects/NAME/
//
// so the host command, bash and fish can never disagree about what is excluded.
#pragma once

#include <optional>
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
// Where the project must be for its mode (config.yaml): in the copy-mode folder or the shared
// one. A project found in the other is moved there first (a rename, said on stderr). Returns
// its path.
std::string PlaceProject(const Config& config, const std::string& project);
CopySource ProjectCopy(const Config& config, const std::string& project);
CopySource FolderCopy(const Folder& folder);

// The sources whose working copies live in `sandbox`: the folder's when it is a copy-mode
// folder's own sandbox (nothing for another folder's), else every copy-mode project.
std::vector<CopySource> CopySourcesIn(const Config& config, const std::string& sandbox);
// Whether any sandbox may hold a working copy: a copy-mode project or folder exists.
bool AnyCopySources(const Config& config);
// `source`, when its copy lives in `sandbox`; else ss::Error(64) saying where it lives.
void RequireCopyIn(const Config& config, const CopySource& source, const std::string& sandbox);

std::string SourceDir(const std::string& project);    // /home/sandbox/project-src/NAME
std::string CopyDir(const std::string& project);      // /home/sandbox/copy-projects/NAME
std::string SyncStamp(const std::string& project);    // /home/sandbox/.ss/sync/NAME.stamp
std::string SourceStamp(const std::string& project);  // /home/sandbox/.ss/sources/NAME.stamp

// True when the project is in working-copy mode (projects.<name>.mode: copy).
bool IsCopyMode(const Config& config, const std::string& project);

// Installs /etc/ss/sync-exclude when it changed and, for a `source` with a name, makes the
// working-copy layout above and sends the source (SendSource); the first time, the copy is
// filled from it, and its base recorded for `sandbox` (apply_base.hpp). A layout of an older ss
// (binds over the shared folder) is taken down and its copy kept. Returns true when the copy
// was created now. Throws ss::Error(69) when the sandbox cannot make it.
bool PrepareWorkingCopy(SshConnection& conn, const Config& config, const CopySource& source,
                        const std::string& sandbox);

// Sends the host's folder to ~/project-src/NAME as it stands now, unless what was last sent is
// the same: a tar made on the host of what ExcludeRules lets through, replacing the source
// whole. `sent` is the stamp of what was last sent, when known (else it is asked for). Throws
// ss::Error(74) when the folder cannot be read, 255 when the sandbox cannot take it.
void SendSource(SshConnection& conn, const Config& config, const CopySource& source,
                std::optional<std::string> sent = std::nullopt);

}  // namespace ss
