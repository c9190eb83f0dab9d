// The deploy folder: a host directory a sandbox gets read-write at /mnt/deploy, for build output
// the sandbox's `deploy` shell function copies there (shell/ss.bash, shell/ss.fish). It is chosen
// when the sandbox is created (--deploy DIR on ss vm start / reset, else sandboxes.<name>.deploy
// in config.yaml), recorded with the sandbox and kept by later starts and by reset. Files written
// there belong to the projects' owner on the host, as in the projects folder.
#pragma once

#include <string>

namespace ss {

inline constexpr const char* kDeployTarget = "/mnt/deploy";

// The deploy folder `dir` as an absolute path with symbolic links resolved ("~/x" is under the
// home directory, a relative path under the current one). `origin` says where it was given
// ("--deploy DIR", "sandboxes.box.deploy in ~/super-sandbox/config.yaml") for the error's hint.
// Checked as every shared folder is (ResolveHostFolder in shares.hpp): throws ss::Error 66 when
// it does not exist or is not a directory, 77 when it holds ss's keys or this user (not
// root) cannot write to it.
std::string ResolveDeployDir(const std::string& dir, const std::string& origin);

}  // namespace ss
