#include "folder_guard.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <optional>

#include "error.hpp"
#include "exit_code.hpp"
#include "fs.hpp"
#include "fs_at.hpp"
#include "held_repository.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "project.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// What in a repository's .git names programs the host's git runs: its settings, a common
// directory they may come from, its hooks (facts: git's settings that run a program).
bool RunsPrograms(const std::string& name) {
  return name == "config" || name == "config.worktree" || name == "commondir" || name == "hooks";
}

}  // namespace

FolderGuard::FolderGuard(std::vector<GuardedFolder> folders,
                         std::function<void(const std::string&)> say)
    : folders_(std::move(folders)), say_(std::move(say)), watch_(platform::OpenFolderWatch()) {
  if (!watch_.ok()) {
    throw Error(kExitUnavailable, Cat("cannot watch folders: ", std::strerror(errno)));
  }
  top_repository_.assign(folders_.size(), false);
  for (size_t i = 0; i < folders_.size(); ++i) {
    Fd top(::open(folders_[i].path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (!top.ok()) {
      say_(Cat("cannot watch ", DisplayPath(folders_[i].path), ": ", std::strerror(errno)));
      continue;
    }
    struct stat st;
    top_repository_[i] =
        !folders_[i].projects && ::fstatat(top.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0;
    Walk(i, -1, "", std::move(top), Pass::kFirst);
  }
}

// Depth first, one open folder per level: each folder is watched before it is read, so that an
// entry made meanwhile is either read or reported.
void FolderGuard::Walk(size_t folder, int parent, const std::string& name, Fd dir, Pass pass) {
  struct Level {
    int wd;
    Fd fd;
    std::vector<std::pair<std::string, unsigned char>> entries;
    size_t next = 0;
  };
  std::vector<Level> levels;
  auto enter = [&](int in, const std::string& as, Fd fd) {
    int wd = Watch(folder, in, as, fd.get(), false);
    if (wd < 0) return;
    if (pass == Pass::kLater) CheckBare(wd, fd.get());
    auto entries = ReadDirAt(fd.get());
    levels.push_back(Level{wd, std::move(fd), std::move(entries)});
  };
  enter(parent, name, std::move(dir));
  while (!levels.empty()) {
    Level& at = levels.back();
    if (at.next == at.entries.size()) {
      levels.pop_back();
      continue;
    }
    auto [entry, type] = at.entries[at.next++];
    if (entry == ".git") {
      CheckGit(at.wd, at.fd.get(), pass, false);
      continue;
    }
    if (type != DT_DIR && type != DT_UNKNOWN) continue;
    Fd sub(OpenDirAt(at.fd.get(), entry));
    if (!sub.ok()) continue;  // not a folder (a link), or gone
    enter(at.wd, entry, std::move(sub));
  }
}

int FolderGuard::Watch(size_t folder, int parent, const std::string& name, int dir_fd, bool repo) {
  struct stat st;
  if (::fstat(dir_fd, &st) != 0) return -1;
  // A project's top is watched for its files' writes too: its .git file rewritten in place.
  bool top = folders_[folder].projects && parent >= 0 && watched_.count(parent) &&
             watched_.at(parent).parent == -1;
  int wd = platform::AddFolderWatch(watch_.get(), dir_fd,
                                    repo || top || written_.count({st.st_dev, st.st_ino}));
  if (wd < 0) {
    if ((errno == ENOSPC || errno == ENOMEM) && !full_) {
      full_ = true;
      say_(
          Cat("cannot watch more folders (the system's limit of watches is reached): what the "
              "sandbox makes in folders not yet watched in ",
              DisplayPath(folders_[folder].path), " is seen only as a session ends"));
    }
    return -1;
  }
  // A folder watched already under another name (moved, and walked again): found by the new.
  if (auto old = watched_.find(wd); old != watched_.end() && old->second.parent != -1) {
    children_.erase({old->second.parent, old->second.name});
  }
  watched_[wd] = Watched{folder, parent, name, st.st_dev, st.st_ino, repo};
  if (parent != -1) children_[{parent, name}] = wd;
  return wd;
}

// Watched folder `wd`, found now as `name` in watched folder `parent`.
void FolderGuard::Reparent(int wd, int parent, const std::string& name) {
  Watched& m = watched_.at(wd);
  children_.erase({m.parent, m.name});
  m.parent = parent;
  m.name = name;
  children_[{parent, name}] = wd;
}

void FolderGuard::Forget(int wd) {
  auto it = watched_.find(wd);
  if (it == watched_.end()) return;
  if (auto hooks = children_.find({wd, "hooks"}); hooks != children_.end()) {
    int h = hooks->second;
    children_.erase(hooks);
    platform::RemoveFolderWatch(watch_.get(), h);
    watched_.erase(h);
  }
  children_.erase({it->second.parent, it->second.name});
  watched_.erase(it);
  platform::RemoveFolderWatch(watch_.get(), wd);
}

std::optional<std::string> FolderGuard::Rel(int wd) const {
  std::vector<const std::string*> names;
  for (int at = wd, steps = 0;; ++steps) {
    auto it = watched_.find(at);
    if (it == watched_.end() || it->second.parent == -2 || steps > 4096) return std::nullopt;
    if (it->second.parent == -1) break;
    names.push_back(&it->second.name);
    at = it->second.parent;
  }
  std::string rel;
  for (auto n = names.rbegin(); n != names.rend(); ++n) rel += (rel.empty() ? "" : "/") + **n;
  return rel;
}

std::string FolderGuard::Shown(int wd) const {
  const Watched& w = watched_.at(wd);
  std::string rel = Rel(wd).value_or("?");
  return DisplayPath(rel.empty() ? folders_[w.folder].path
                                 : Cat(folders_[w.folder].path, "/", rel));
}

bool FolderGuard::ProjectTop(int wd) const {
  const Watched& w = watched_.at(wd);
  return folders_[w.folder].projects && !w.repo && w.parent >= 0 && watched_.count(w.parent) &&
         watched_.at(w.parent).parent == -1;
}

// The watched folder by its path, never through a link, and only if it is still that folder.
Fd FolderGuard::Open(int wd) const {
  auto rel = Rel(wd);
  if (!rel) return Fd();
  const Watched& w = watched_.at(wd);
  Fd fd(::open(folders_[w.folder].path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (const std::string& part : Split(*rel, '/')) {
    if (!fd.ok() || part.empty()) break;
    fd = Fd(OpenDirAt(fd.get(), part));
  }
  struct stat st;
  if (!fd.ok() || ::fstat(fd.get(), &st) != 0 || st.st_dev != w.dev || st.st_ino != w.ino) {
    return Fd();
  }
  return fd;
}

void FolderGuard::CheckGit(int wd, int dir_fd, Pass pass, bool rewritten) {
  const Watched w = watched_.at(wd);
  struct stat st;
  if (::fstatat(dir_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  std::pair<dev_t, ino_t> key{st.st_dev, st.st_ino};
  if (ProjectTop(wd)) {
    // A shared project's: its .git file is ss's (held_repository.hpp), put back whatever the
    // sandbox did. A project whose repository ss does not hold: what was there at the start is
    // the user's (the first session holds it); one that appears is set aside as a session's
    // start would, with how to give it to ss.
    const std::string& name = w.name;
    struct stat h;
    bool held = IsValidProjectName(name) && ::lstat(HeldRepositoryDir(name).c_str(), &h) == 0 &&
                S_ISDIR(h.st_mode) && !PathExists(Cat(CopyProjectsDir(), "/", name));
    if (!held) {
      // ss's own file, its repository about to be put in place (ss new): leads nowhere else.
      std::string problem;
      if (S_ISREG(st.st_mode) &&
          ReadSmallFileAt(dir_fd, ".git", 4096, &problem).value_or("") == HeldGitFile(name)) {
        return;
      }
      if (pass == Pass::kFirst) {
        known_.insert(key);
        return;
      }
      if ((known_.count(key) && !rewritten) ||
          PathExists(Cat(RepositoriesDir(), "/.left-", name))) {
        return;
      }
    }
    if (pass == Pass::kFirst) return;  // the session about to start holds it
    if (IsValidProjectName(name)) {
      try {
        Holding done = HoldRepository(Cat(folders_[w.folder].path, "/", name), name, false);
        for (const auto& line : done.said) say_(Cat("project '", name, "': ", line));
      } catch (const Error& e) {
        say_(Cat("project '", name, "': ", e.what()));
      }
      return;
    }
  } else if (w.parent == -1 && (top_repository_[w.folder] || pass == Pass::kFirst)) {
    // The repository a folder was shared with (ss . --no-copy), said each session; a .git in
    // the projects folder itself is set aside by each session, and by this guard once it runs.
    return;
  } else if (pass == Pass::kFirst || (known_.count(key) && !rewritten)) {
    // One of the user's, there before the sandbox ran (or moved within the folder): its settings
    // and hooks are watched.
    known_.insert(key);
    if (!S_ISDIR(st.st_mode)) {
      // A .git file (a worktree's, a submodule's): its folder is watched for writes too, so that
      // one through a descriptor kept open is seen at once, not when it is closed.
      struct stat d;
      if (::fstat(dir_fd, &d) == 0 && written_.insert({d.st_dev, d.st_ino}).second) {
        platform::AddFolderWatch(watch_.get(), dir_fd, true);
      }
      return;
    }
    Fd git(OpenDirAt(dir_fd, ".git"));
    if (!git.ok()) return;
    int g = Watch(w.folder, wd, ".git", git.get(), true);
    Fd hooks(OpenDirAt(git.get(), "hooks"));
    if (g >= 0 && hooks.ok()) Watch(w.folder, g, "hooks", hooks.get(), true);
    return;
  }
  known_.erase(key);
  const char* what = S_ISDIR(st.st_mode)   ? "a repository"
                     : S_ISREG(st.st_mode) ? "a .git file"
                     : S_ISLNK(st.st_mode) ? "a .git link"
                                           : "a .git";
  try {
    std::string at = MoveGitAside(dir_fd, Shown(wd));
    say_(Cat("set aside ", what, " that appeared in a shared folder while the sandbox ran: ", at));
  } catch (const Error& e) {
    if (::fstatat(dir_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) say_(e.what());
  }
}

// What git takes for a repository without a .git: a folder with HEAD, objects and refs (or a
// commondir), whose config it obeys when run there or below. Its HEAD is set aside, which makes
// it no repository; in a folder ss set aside already, without a word.
void FolderGuard::CheckBare(int wd, int dir_fd) {
  struct stat st;
  auto is = [&](const char* name, bool dir) {
    return ::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode) == dir;
  };
  if (::fstatat(dir_fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  // As git asks: objects and refs reached (through links, or files that can be searched).
  auto reached = [&](const char* name) { return ::faccessat(dir_fd, name, X_OK, 0) == 0; };
  if (!((reached("objects") && reached("refs")) || is("commondir", false))) return;
  std::string at;
  try {
    at = MoveAside(dir_fd, Shown(wd), "HEAD");
  } catch (const Error&) {
    return;  // gone meanwhile
  }
  if (!watched_.at(wd).name.starts_with(".git.refused-")) {
    say_(
        Cat("set aside the HEAD of a repository that appeared in a shared folder while the "
            "sandbox ran (git would take the folder for one): ",
            at));
  }
}

// Something changed in one of the user's repositories watched since the start (its .git, or its
// hooks): if it names programs, the repository is set aside whole.
void FolderGuard::RepositoryChanged(int wd, const std::string& name) {
  const Watched w = watched_.at(wd);
  bool in_hooks =
      w.name == "hooks" && w.parent >= 0 && watched_.count(w.parent) && watched_.at(w.parent).repo;
  if (!in_hooks && !RunsPrograms(name)) return;
  int git = in_hooks ? w.parent : wd;
  const Watched g = watched_.at(git);
  Fd dir = Open(g.parent);
  struct stat st;
  if (!dir.ok() || ::fstatat(dir.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      st.st_ino != g.ino || st.st_dev != g.dev) {
    return;
  }
  Forget(git);
  known_.erase({st.st_dev, st.st_ino});
  try {
    std::string at = MoveGitAside(dir.get(), Shown(g.parent));
    say_(Cat("set aside a repository whose ", in_hooks ? "hooks" : name,
             " changed while the sandbox ran: ", at));
  } catch (const Error& e) {
    say_(e.what());
  }
}

void FolderGuard::Rescan() {
  for (size_t i = 0; i < folders_.size(); ++i) {
    Fd top(::open(folders_[i].path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (top.ok()) Walk(i, -1, "", std::move(top), Pass::kLater);
  }
}

bool FolderGuard::Step(int timeout_ms) {
  pollfd p{watch_.get(), POLLIN, 0};
  int ready = ::poll(&p, 1, timeout_ms);
  if (ready < 0 && errno != EINTR) {
    throw Error(kExitIoErr, Cat("cannot watch folders: ", std::strerror(errno)));
  }
  std::vector<platform::FolderEvent> events;
  if (ready > 0 && platform::ReadFolderEvents(watch_.get(), events) < 0) {
    throw Error(kExitIoErr, Cat("cannot read what changed in folders: ", std::strerror(errno)));
  }
  std::map<uint32_t, int> moved_out;  // a folder moved from its place: its watch, by cookie
  bool rescan = false;
  for (const auto& e : events) {
    if (e.watch < 0) {  // the kernel dropped events: everything is looked at again
      rescan = true;
      continue;
    }
    auto it = watched_.find(e.watch);
    if (it == watched_.end()) continue;
    if (e.gone) {
      if (it->second.parent >= 0) children_.erase({it->second.parent, it->second.name});
      watched_.erase(it);
      continue;
    }
    if (it->second.repo) {
      if (!e.left) RepositoryChanged(e.watch, e.name);
      continue;
    }
    if (e.name == ".git" && e.left) {
      // One of the user's moved from its name: no longer known (it would come back changed).
      if (auto c = children_.find({e.watch, e.name}); c != children_.end()) {
        const Watched& g = watched_.at(c->second);
        known_.erase({g.dev, g.ino});
        Forget(c->second);
      }
      continue;
    }
    if (e.folder && e.left) {
      if (auto c = children_.find({e.watch, e.name}); c != children_.end()) {
        moved_out[e.cookie] = c->second;
      }
      continue;
    }
    if (e.folder && e.arrived && e.name != ".git") {
      if (auto from = moved_out.find(e.cookie); e.cookie != 0 && from != moved_out.end()) {
        // Moved within the tree: the same folders, watched already, under a new name. What is
        // in them was looked at as it appeared.
        Reparent(from->second, e.watch, e.name);
        moved_out.erase(from);
        continue;
      }
      Fd dir = Open(e.watch);
      Fd sub(dir.ok() ? OpenDirAt(dir.get(), e.name) : -1);
      if (!dir.ok()) rescan = true;
      if (sub.ok()) Walk(it->second.folder, e.watch, e.name, std::move(sub), Pass::kLater);
      // objects or refs made last: the folder they are in may be a repository now.
      if (dir.ok() && (e.name == "objects" || e.name == "refs")) CheckBare(e.watch, dir.get());
      continue;
    }
    if (e.name == ".git") {
      // A folder of the tree moved in as .git: the guard's own watch of it goes with it.
      if (auto from = moved_out.find(e.cookie); e.cookie != 0 && from != moved_out.end()) {
        Reparent(from->second, e.watch, e.name);
        moved_out.erase(from);
      }
      Fd dir = Open(e.watch);
      if (!dir.ok()) {
        rescan = true;
        continue;
      }
      CheckGit(e.watch, dir.get(), Pass::kLater, !e.arrived);
      continue;
    }
    if (e.name == "HEAD" || e.name == "objects" || e.name == "refs" || e.name == "commondir" ||
        e.name == "config") {
      Fd dir = Open(e.watch);
      if (dir.ok()) CheckBare(e.watch, dir.get());
    }
  }
  // Moved out of the tree (or paired in a later read: then walked again as new).
  for (const auto& [cookie, wd] : moved_out) {
    auto it = watched_.find(wd);
    if (it == watched_.end()) continue;
    children_.erase({it->second.parent, it->second.name});
    it->second.parent = -2;
  }
  if (rescan) Rescan();
  return !watched_.empty();
}

}  // namespace ss
