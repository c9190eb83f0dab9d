// Where ss keeps things.
//
//   $SS_HOME (default ~/super-sandbox)   the user's: config.yaml, projects/, copy-projects/,
//                                          repositories/
//   $SS_HOME/.ss/                         ss's own state: keys, known_hosts, sandboxes/<name>/
//   $SS_CACHE (default $XDG_CACHE_HOME/ss or ~/.cache/ss)   built images, reusable, deletable;
//                                          spool/: what a sandbox sends, while it is checked
//   $XDG_RUNTIME_DIR/ss or /tmp/ss-<uid>  sockets and pid files (0700), short paths for sun_path
#pragma once

#include <sys/types.h>

#include <string>

namespace ss {

std::string HomeDir();
std::string SsHome();
std::string ConfigPath();
std::string ProjectsDir();
// Copy-mode projects ($SS_HOME/copy-projects): beside the projects folder, never shared.
std::string CopyProjectsDir();
// The repositories of shared projects ($SS_HOME/repositories): beside the projects folder, never
// shared (held_repository.hpp).
std::string RepositoriesDir();
std::string StateDir();
std::string CacheDir();
std::string RuntimeDir();  // created 0700 on first use
// Where archives from a sandbox are kept while they are checked and written: on the user's disk
// (a memory-backed /tmp would hold them in RAM). Created 0700 on first use.
std::string SpoolDir();

// Who owns the projects on the host: the user running ss (root too); under sudo, the user who
// ran sudo. Each backend makes the sandbox user's files theirs (see backend.hpp).
struct Owner {
  uid_t uid;
  gid_t gid;
};
Owner ProjectsOwner();
// The projects folder, created (mkdir -p) and given to ProjectsOwner() when it is missing. An
// existing folder is left as it is. The folder holding it (SS_HOME) is made 0700: the sandbox
// can make setuid files in the projects, which no other account of this host may reach.
std::string EnsureProjectsDir();
std::string EnsureCopyProjectsDir();  // made 0700 when missing
std::string EnsureRepositoriesDir();  // made 0700 when missing
// Makes `path` (and its missing parents, 0755; SS_HOME 0700) with `mode`, given to
// ProjectsOwner() when root makes it: folders ss makes in the user's home under sudo are the
// user's.
void MakeOwnedDir(const std::string& path, mode_t mode);
// The host ids whose files the sandbox user owns: the projects folder's owner.
Owner ProjectsIds();
uid_t ProjectsUid();

// The directory holding the running executable (resolved through /proc/self/exe).
std::string ExecutableDir();

// "~/super-sandbox/projects/x" when the path is under $HOME, else the path itself.
std::string DisplayPath(const std::string& path);

}  // namespace ss
