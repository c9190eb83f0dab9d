#include "paths.hpp"

#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "error.hpp"
#include "fs.hpp"
#include "platform.hpp"
#include "strings.hpp"

namespace ss {
namespace {

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

std::string Absolute(const std::string& path) {
  if (path.empty() || path[0] == '/') return path;
  char cwd[PATH_MAX];
  if (::getcwd(cwd, sizeof cwd) == nullptr) return path;
  return Cat(cwd, "/", path);
}

std::string StripTrailingSlash(std::string p) {
  while (p.size() > 1 && p.back() == '/') p.pop_back();
  return p;
}

}  // namespace

std::string HomeDir() {
  std::string home = Env("HOME");
  if (!home.empty()) return StripTrailingSlash(home);
  if (passwd* pw = ::getpwuid(::getuid())) return pw->pw_dir;
  throw Error(kExitConfig, "cannot find the home directory: HOME is not set", {},
              {"set HOME or SS_HOME"});
}

std::string SsHome() {
  std::string home = Env("SS_HOME");
  if (!home.empty()) return StripTrailingSlash(Absolute(home));
  return HomeDir() + "/super-sandbox";
}

std::string ConfigPath() { return SsHome() + "/config.yaml"; }
std::string ProjectsDir() { return SsHome() + "/projects"; }
std::string CopyProjectsDir() { return SsHome() + "/copy-projects"; }
std::string RepositoriesDir() { return SsHome() + "/repositories"; }
std::string StateDir() { return SsHome() + "/.ss"; }

std::string CacheDir() {
  std::string dir = Env("SS_CACHE");
  if (!dir.empty()) return StripTrailingSlash(Absolute(dir));
  std::string xdg = Env("XDG_CACHE_HOME");
  if (!xdg.empty()) return StripTrailingSlash(xdg) + "/ss";
  return HomeDir() + "/.cache/ss";
}

std::string SpoolDir() {
  std::string dir = CacheDir() + "/spool";
  MakeOwnedDir(dir, 0700);
  return dir;
}

std::string RuntimeDir() {
  std::string xdg = Env("XDG_RUNTIME_DIR");
  std::string dir = !xdg.empty() ? StripTrailingSlash(xdg) + "/ss" : Cat("/tmp/ss-", ::getuid());
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    throw Error(kExitIoErr, Cat("cannot create '", dir, "': ", std::strerror(errno)));
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != ::getuid() ||
      (st.st_mode & 077) != 0) {
    throw Error(kExitNoPerm, Cat("unsafe runtime directory '", dir, "'"),
                {"it must be a directory owned by you with mode 0700"},
                {Cat("remove it and run the command again: rm -r ", dir)});
  }
  return dir;
}

Owner ProjectsOwner() {
  if (::geteuid() != 0) return {::geteuid(), ::getegid()};
  const char* sudo_uid = std::getenv("SUDO_UID");
  const char* sudo_gid = std::getenv("SUDO_GID");
  if (sudo_uid && *sudo_uid && std::string_view(sudo_uid) != "0") {
    uid_t uid = static_cast<uid_t>(std::strtoul(sudo_uid, nullptr, 10));
    gid_t gid =
        sudo_gid && *sudo_gid ? static_cast<gid_t>(std::strtoul(sudo_gid, nullptr, 10)) : uid;
    return {uid, gid};
  }
  return {0, 0};
}

void MakeOwnedDir(const std::string& path, mode_t mode) {
  if (IsDirectory(path)) return;
  // SS_HOME itself is the user's alone, whichever of its folders is made first.
  if (std::string home = SsHome(); path.rfind(home + "/", 0) == 0) MakeOwnedDir(home, 0700);
  MakeDirs(Dirname(path), 0755);
  if (::mkdir(path.c_str(), mode) != 0 && errno != EEXIST) {
    throw Error(kExitIoErr, Cat("cannot create '", path, "': ", std::strerror(errno)));
  }
  Owner o = ProjectsOwner();
  if (::geteuid() == 0 && ::lchown(path.c_str(), o.uid, o.gid) != 0) {
    throw Error(kExitIoErr,
                Cat("cannot give '", path, "' to uid ", o.uid, ": ", std::strerror(errno)));
  }
}

namespace {
// `dir` in SS_HOME, made (with SS_HOME) when missing.
std::string EnsureHomeDir(std::string dir, mode_t mode) {
  if (IsDirectory(dir)) return dir;
  MakeOwnedDir(Dirname(dir), 0700);  // SS_HOME
  MakeOwnedDir(dir, mode);
  return dir;
}
}  // namespace

std::string EnsureProjectsDir() { return EnsureHomeDir(ProjectsDir(), 0755); }
std::string EnsureCopyProjectsDir() { return EnsureHomeDir(CopyProjectsDir(), 0700); }
std::string EnsureRepositoriesDir() { return EnsureHomeDir(RepositoriesDir(), 0700); }

Owner ProjectsIds() {
  struct stat st;
  if (::stat(EnsureProjectsDir().c_str(), &st) != 0) return ProjectsOwner();
  return {st.st_uid, st.st_gid};
}

uid_t ProjectsUid() { return ProjectsIds().uid; }

std::string ExecutableDir() {
  std::string self = platform::ExecutablePath();
  return self.empty() ? "." : Dirname(self);
}

std::string DisplayPath(const std::string& path) {
  std::string home = Env("HOME");
  home = StripTrailingSlash(home);
  if (!home.empty() && home != "/" && path.rfind(home + "/", 0) == 0) {
    return "~" + path.substr(home.size());
  }
  if (!home.empty() && path == home) return "~";
  return path;
}

}  // namespace ss
