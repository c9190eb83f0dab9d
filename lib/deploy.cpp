#include "deploy.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "error.hpp"
#include "paths.hpp"
#include "strings.hpp"

namespace ss {

std::string ResolveDeployDir(const std::string& dir, const std::string& origin) {
  if (dir.empty()) {
    throw Error(kExitUsage, "no deploy folder given", {}, {Cat("name one: ", origin)});
  }
  std::string path = dir;
  if (path == "~") {
    path = HomeDir();
  } else if (path.rfind("~/", 0) == 0) {
    path = HomeDir() + path.substr(1);
  }
  struct stat st;
  if (::stat(path.c_str(), &st) != 0) {
    int err = errno;
    if (err == ENOENT || err == ENOTDIR) {
      throw Error(kExitNoInput, Cat("deploy folder '", dir, "' does not exist"), {},
                  {Cat("create it first (mkdir -p ", path, "), or name another: ", origin)});
    }
    throw Error(kExitNoInput, Cat("cannot use deploy folder '", dir, "': ", std::strerror(err)), {},
                {Cat("name another: ", origin)});
  }
  if (!S_ISDIR(st.st_mode)) {
    throw Error(kExitNoInput, Cat("deploy folder '", dir, "' is not a directory"), {},
                {Cat("name a directory: ", origin)});
  }
  char resolved[PATH_MAX];
  if (!::realpath(path.c_str(), resolved)) {
    throw Error(kExitNoInput, Cat("cannot use deploy folder '", dir, "': ", std::strerror(errno)),
                {}, {Cat("name another: ", origin)});
  }
  // The sandbox writes there as the projects' owner: the user running ss (root too), or under
  // sudo the user who ran it. Root writes anywhere, the sandbox does not: for root, and for
  // another owner, the folder's owner and modes say.
  uid_t writer = ProjectsUid();
  bool mine = writer == ::geteuid();
  struct stat rst;
  bool writable =
      mine && writer != 0
          ? ::access(resolved, W_OK | X_OK) == 0
          : ::stat(resolved, &rst) == 0 &&
                ((rst.st_uid == writer && (rst.st_mode & S_IWUSR) && (rst.st_mode & S_IXUSR)) ||
                 ((rst.st_mode & S_IWOTH) && (rst.st_mode & S_IXOTH)));
  if (!writable) {
    throw Error(kExitNoPerm,
                mine ? Cat("deploy folder '", dir, "' is not writable by you")
                     : Cat("deploy folder '", dir, "' is not writable by the sandbox's user (uid ",
                           writer, ", the owner of the projects folder)"),
                {},
                {Cat("give it to ", mine ? "yourself" : "that user", ": chown ", writer, " ",
                     resolved, ", or name another: ", origin)});
  }
  return resolved;
}

}  // namespace ss
