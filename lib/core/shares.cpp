#include "shares.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "error.hpp"
#include "fs.hpp"
#include "paths.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// Places in the sandbox a shared folder may not cover: the system, and what ss itself puts there.
bool ReservedGuestPath(const std::string& p) {
  static const char* const kTrees[] = {"/bin",   "/boot",   "/dev",  "/etc",  "/lib", "/lib32",
                                       "/lib64", "/libx32", "/proc", "/root", "/run", "/sbin",
                                       "/sys",   "/usr",    "/var",  "/tmp"};
  for (const char* t : kTrees) {
    if (p == t || p.rfind(Cat(t, "/"), 0) == 0) return true;
  }
  static const char* const kExact[] = {"/", "/home", "/home/sandbox", kWorkspaceRoot, "/mnt"};
  for (const char* e : kExact) {
    if (p == e) return true;
  }
  static const char* const kOwn[] = {"/home/sandbox/projects", "/home/sandbox/project-src",
                                     "/home/sandbox/.ss",      "/home/sandbox/.claude",
                                     "/home/sandbox/.ssh",     "/mnt/deploy"};
  for (const char* o : kOwn) {
    if (p == o || p.rfind(Cat(o, "/"), 0) == 0) return true;
  }
  return false;
}

// Whether `inner` is `outer` or below it.
bool Within(const std::string& inner, const std::string& outer) {
  return inner == outer || (outer == "/" ? true : inner.rfind(outer + "/", 0) == 0);
}

std::string Resolved(const std::string& path) {
  std::string real = RealPath(path);
  return real.empty() ? path : real;
}

}  // namespace

std::optional<MountSpec> ParseMountSpec(std::string_view text, std::string* problem) {
  auto fail = [&](std::string why) -> std::optional<MountSpec> {
    *problem = Cat(Quoted(text), ": ", why);
    return std::nullopt;
  };
  // HOST may hold ':' of its own; GUEST and the mode may not: split from the right.
  MountSpec m;
  std::string rest(text);
  if (rest.size() > 3 && rest.ends_with(":ro")) {
    m.read_only = true;
    rest.resize(rest.size() - 3);
  } else if (rest.size() > 3 && rest.ends_with(":rw")) {
    rest.resize(rest.size() - 3);
  }
  size_t colon = rest.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == rest.size()) {
    return fail("expected HOST:GUEST or HOST:GUEST:ro");
  }
  m.host = rest.substr(0, colon);
  m.guest = rest.substr(colon + 1);
  if (m.guest[0] != '/') return fail("GUEST must be an absolute path in the sandbox");
  for (unsigned char c : m.guest) {
    if (c <= ' ' || c == 0x7f) return fail("GUEST may not hold spaces or control characters");
  }
  if (ReservedGuestPath(m.guest)) {
    return fail(Cat(m.guest, " is the system's or ss's own; share under /mnt, /data, /opt, ",
                    "/srv or /home/sandbox instead"));
  }
  for (const auto& part : Split(m.guest.substr(1), '/')) {
    if (part.empty() || part == "." || part == "..") {
      return fail("GUEST must be a plain path (no '//', '.', '..' or trailing '/')");
    }
  }
  for (unsigned char c : m.host) {
    if (c < ' ' || c == 0x7f) return fail("HOST may not hold control characters");
  }
  return m;
}

std::string ResolveHostFolder(const std::string& dir, const std::string& what,
                              const std::string& origin, bool writable) {
  if (dir.empty()) {
    throw Error(kExitUsage, Cat("no ", what, " given"), {}, {Cat("name one: ", origin)});
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
      throw Error(kExitNoInput, Cat(what, " '", dir, "' does not exist"), {},
                  {Cat("create it first (mkdir -p ", path, "), or name another: ", origin)});
    }
    throw Error(kExitNoInput, Cat("cannot use ", what, " '", dir, "': ", std::strerror(err)), {},
                {Cat("name another: ", origin)});
  }
  if (!S_ISDIR(st.st_mode)) {
    throw Error(kExitNoInput, Cat(what, " '", dir, "' is not a directory"), {},
                {Cat("name a directory: ", origin)});
  }
  std::string resolved = RealPath(path);
  if (resolved.empty()) {
    throw Error(kExitNoInput, Cat("cannot use ", what, " '", dir, "': ", std::strerror(errno)), {},
                {Cat("name another: ", origin)});
  }
  // What the sandbox must never see: ss's keys and pins, the sockets of its sessions, the
  // user's SSH keys. A folder holding one of them, or inside one, is refused (the filesystem's
  // root holds them all).
  const std::pair<std::string, const char*> kept[] = {
      {Resolved(StateDir()), "ss's own keys and state"},
      {Resolved(HomeDir() + "/.ssh"), "your SSH keys"},
      {Resolved(RuntimeDir()), "ss's session sockets"}};
  for (const auto& [secret, why] : kept) {
    if (Within(secret, resolved) || Within(resolved, secret)) {
      throw Error(kExitNoPerm, Cat(what, " '", dir, "' holds ", why, " (", secret, ")"), {},
                  {Cat("share a folder that does not: ", origin)});
    }
  }
  if (!writable) return resolved;
  // The sandbox writes there as the projects' owner: the user running ss (root too), or under
  // sudo the user who ran it. Root writes anywhere, the sandbox does not: for root, and for
  // another owner, the folder's owner and modes say.
  uid_t writer = ProjectsUid();
  bool mine = writer == ::geteuid();
  struct stat rst;
  bool can_write =
      mine && writer != 0
          ? ::access(resolved.c_str(), W_OK | X_OK) == 0
          : ::stat(resolved.c_str(), &rst) == 0 &&
                ((rst.st_uid == writer && (rst.st_mode & S_IWUSR) && (rst.st_mode & S_IXUSR)) ||
                 ((rst.st_mode & S_IWOTH) && (rst.st_mode & S_IXOTH)));
  if (!can_write) {
    throw Error(kExitNoPerm,
                mine ? Cat(what, " '", dir, "' is not writable by you")
                     : Cat(what, " '", dir, "' is not writable by the sandbox's user (uid ", writer,
                           ", the owner of the projects folder)"),
                {},
                {Cat("give it to ", mine ? "yourself" : "that user", ": chown ", writer, " ",
                     resolved, ", or name another: ", origin)});
  }
  return resolved;
}

std::string FolderShareName(const std::string& path) {
  std::string base = path.substr(path.find_last_of('/') + 1);
  std::string out;
  for (char c : base) {
    char l = (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
    bool ok = (l >= 'a' && l <= 'z') || (l >= '0' && l <= '9');
    if (ok) {
      out += l;
    } else if (!out.empty() && out.back() != '-') {
      out += '-';
    }
  }
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.size() > 40) out.resize(40);
  while (!out.empty() && out.back() == '-') out.pop_back();
  if (out.empty() || !(out[0] >= 'a' && out[0] <= 'z'))
    out = "folder" + (out.empty() ? "" : "-" + out);
  return out;
}

}  // namespace ss
