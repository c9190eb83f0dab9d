// Where ss keeps things.
//
//   $SS_HOME (default ~/super-sandbox)   the user's: config.yaml, projects/
//   $SS_HOME/.ss/                         ss's own state: keys, known_hosts, sandboxes/<name>/
//   $SS_CACHE (default $XDG_CACHE_HOME/ss or ~/.cache/ss)   built images, reusable, deletable
//   $XDG_RUNTIME_DIR/ss or /tmp/ss-<uid>  sockets and pid files (0700), short paths for sun_path
#pragma once

#include <sys/types.h>

#include <string>

namespace ss {

std::string HomeDir();
std::string SsHome();
std::string ConfigPath();
std::string ProjectsDir();
std::string StateDir();
std::string CacheDir();
std::string RuntimeDir();  // created 0700 on first use

// Who owns the projects on the host: the user running ss; under sudo, the user who ran sudo.
// When root itself runs ss, projects belong to uid/gid 1000, the sandbox user's ids, so that
// the agent can write them through a plain bind mount and root is never mapped into a sandbox
// (root can still read and write everything).
struct Owner {
  uid_t uid;
  gid_t gid;
};
Owner ProjectsOwner();
// The projects folder, created (mkdir -p) and given to ProjectsOwner() when it is missing. An
// existing folder is left as it is.
std::string EnsureProjectsDir();
// The host uid whose files the sandbox user owns: the projects folder's owner.
uid_t ProjectsUid();

// The directory holding the running executable (resolved through /proc/self/exe).
std::string ExecutableDir();

// "~/super-sandbox/projects/x" when the path is under $HOME, else the path itself.
std::string DisplayPath(const std::string& path);

}  // namespace ss
