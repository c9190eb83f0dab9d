#include "folder_guard.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <optional>
#include <utility>

#include "digest.hpp"
#include "error.hpp"
#include "exit_code.hpp"
#include "fs.hpp"
#include "fs_at.hpp"
#include "held_repository.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "project.hpp"
#include "strings.hpp"
#include "timefmt.hpp"

namespace ss {
namespace {

// How often the folders are walked again when the system's watches ran out.
constexpr int kFullRescanSeconds = 10;
// At most this many folders of a walk are open at once: a tree may be deeper than the
// descriptors a process may hold. A watched one further up is opened again by its path when the
// walk comes back to it.
constexpr size_t kOpenLevels = 64;
// A path longer than this many folders is shown by its first and last ones.
constexpr size_t kShownFolders = 16;
// How many of the folders walked last are kept open (FolderGuard::recent_).
constexpr size_t kRecentFolders = 16;
// Known()'s line of when the first run began.
constexpr const char* kSinceLine = "since ";

// What in a repository's folder names programs the host's git runs: its settings, a common
// directory they may come from, its hooks (facts: git's settings that run a program), and the
// folders of its submodules and linked worktrees, which hold the same.
bool RunsPrograms(const std::string& name) {
  return name == "config" || name == "config.worktree" || name == "commondir" || name == "hooks" ||
         name == "modules" || name == "worktrees";
}

// Whether ss holds shared project `name`'s repository (held_repository.hpp). (A copy-mode
// project's name in the projects folder is a folder the sandbox made.)
bool IsHeld(const std::string& name) {
  struct stat h;
  return IsValidProjectName(name) && ::lstat(HeldRepositoryDir(name).c_str(), &h) == 0 &&
         S_ISDIR(h.st_mode) && !PathExists(Cat(CopyProjectsDir(), "/", name));
}

// What git takes, or may take later, for a repository without a .git: a folder with HEAD, and
// objects and refs, or a commondir; whatever they are (a link leading nowhere yet, a folder that
// cannot be searched yet: git follows links, and asks only that it can search them).
bool LooksLikeRepository(int dir_fd) {
  auto there = [&](const char* name) {
    struct stat st;
    return ::fstatat(dir_fd, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
  };
  return there("HEAD") && ((there("objects") && there("refs")) || there("commondir"));
}

// Files git opens on its own in the folders it looks at, beside the ones the host's tools obey
// (HostExecRules).
bool GitOpens(std::string_view name) {
  return name == ".gitignore" || name == ".gitattributes" || name == ".gitmodules" ||
         name == ".mailmap";
}

// Other version control a prompt or an editor runs in the folders it enters, which obeys the
// settings of the repository it finds there (Mercurial's hooks, Jujutsu's aliases and tools).
bool OtherVcs(std::string_view name) { return name == ".hg" || name == ".jj"; }
const char* OtherVcsName(std::string_view name) {
  return name == ".hg" ? "a Mercurial repository (.hg)" : "a Jujutsu repository (.jj)";
}

// What in a .hg or .jj folder names programs: its settings, and where they may come from
// (another repository's, shared). `each` gets the folder each is in, and its name.
void OtherVcsSettings(int vcs_fd, const std::string& name,
                      const std::function<void(int, const char*)>& each) {
  if (name == ".hg") {
    for (const char* f : {"hgrc", "hgrc-not-shared", "sharedpath", "requires"}) each(vcs_fd, f);
  } else {
    each(vcs_fd, "repo");  // a folder, or a file naming another workspace's
    if (Fd repo(OpenDirAt(vcs_fd, "repo")); repo.ok()) each(repo.get(), "config.toml");
  }
}

// A .hg or .jj of the user's, its inode and what OtherVcsPrint says, as Known() gives it.
std::string OtherVcsKnownLine(const std::pair<dev_t, ino_t>& id, const std::string& print) {
  return Sha256Hex(Cat("other ", id.first, " ", id.second, "\n", print));
}

// A line for each of those: its inode, mode and (a file's) change time, so that any change is
// seen.
std::string OtherVcsPrint(int vcs_fd, const std::string& name) {
  std::string print;
  OtherVcsSettings(vcs_fd, name, [&](int in, const char* f) {
    struct stat st;
    if (::fstatat(in, f, &st, AT_SYMLINK_NOFOLLOW) != 0) {
      print += Cat(f, " -\n");
    } else if (S_ISDIR(st.st_mode)) {
      print += Cat(f, " ", st.st_ino, " ", st.st_mode, "\n");  // (its entries change its time)
    } else {
      print += Cat(f, " ", st.st_ino, " ", st.st_mode, " ", st.st_ctim.tv_sec, ".",
                   st.st_ctim.tv_nsec, "\n");
    }
  });
  return print;
}

}  // namespace

FolderGuard::FolderGuard(std::vector<GuardedFolder> folders,
                         std::function<void(const std::string&)> say,
                         std::optional<std::set<std::string>> known)
    : folders_(std::move(folders)),
      say_(std::move(say)),
      watch_(platform::OpenFolderWatch()),
      first_known_(std::move(known)) {
  if (!watch_.ok()) {
    throw Error(kExitUnavailable, Cat("cannot watch folders: ", std::strerror(errno)));
  }
  ::clock_gettime(CLOCK_REALTIME, &since_);
  if (first_known_) {
    for (const auto& line : *first_known_) {
      if (!line.starts_with(kSinceLine)) continue;
      if (auto at = ParseTimespec(std::string_view(line).substr(std::strlen(kSinceLine)))) {
        since_ = *at;
        since_first_ = true;
      }
    }
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
    int wd;  // -1: a folder the guard could not watch (its watches ran out), looked at as walked
    Fd fd;
    std::string name;     // in the level above (the walk's first: `name`)
    std::string project;  // a project's name, at a project's top
    std::vector<std::pair<std::string, unsigned char>> entries;
    size_t next = 0;
  };
  std::vector<Level> levels;
  // A folder's path for a message, made only when one is said: a walk keeps one name per level.
  std::optional<std::string> base;
  auto shown = [&](const std::string& leaf = {}) {
    if (!base) base = parent == -1 ? DisplayPath(folders_[folder].path) : Shown(parent);
    std::vector<std::string_view> names;
    for (const auto& l : levels) names.emplace_back(l.name);
    if (!leaf.empty()) names.emplace_back(leaf);
    return ElidedPath(*base, names, kShownFolders);
  };
  auto enter = [&](int in, const std::string& as, Fd fd) {
    int wd = Watch(folder, in, as, fd.get(), false, -1);
    if (wd < 0 && !full_) return;  // gone meanwhile
    std::string project;
    if (wd >= 0) {
      Recent(wd, fd.get());
      if (pass == Pass::kLater) {
        CheckBare(wd, fd.get());
      } else if (!as.starts_with(".git.refused-") && LooksLikeRepository(fd.get()) &&
                 !Trusted(wd, fd.get(), Kind::kBare)) {
        CheckBare(wd, fd.get());
      }
    } else {
      if (LooksLikeRepository(fd.get())) Unwatched(fd.get(), shown(as), "HEAD", pass);
      bool top_in = in >= 0 ? watched_.at(in).parent == -1 : levels.size() == 1 && parent == -1;
      if (folders_[folder].projects && top_in) project = as;
    }
    auto entries = ReadDirAt(fd.get());
    levels.push_back(Level{wd, std::move(fd), as, std::move(project), std::move(entries)});
    if (levels.size() > kOpenLevels) {
      Level& far = levels[levels.size() - 1 - kOpenLevels];
      if (far.wd >= 0) far.fd = Fd();
    }
  };
  bool said_no_descriptors = false;
  enter(parent, name, std::move(dir));
  while (!levels.empty()) {
    Level& at = levels.back();
    if (at.next == at.entries.size()) {
      levels.pop_back();
      continue;
    }
    if (!at.fd.ok()) {
      at.fd = Open(at.wd);
      if (!at.fd.ok()) {
        // Moved meanwhile: the rest of it is walked where it is now, once this walk is done.
        walk_again_ = true;
        levels.pop_back();
        continue;
      }
    }
    // (Named, not bound: a lambda below takes it, which clang 14 allows of variables only.)
    const std::string entry = at.entries[at.next].first;
    const unsigned char type = at.entries[at.next++].second;
    if (entry == ".git") {
      if (at.wd >= 0) {
        CheckGit(at.wd, at.fd.get(), pass, false);
      } else if (!at.project.empty()) {
        if (IsHeld(at.project)) Hold(folder, at.project);
      } else {
        Unwatched(at.fd.get(), shown(), ".git", pass);
      }
      continue;
    }
    // (A folder made or moved in: what it holds raised no event the guard saw. Started again:
    // what was made so while no guard watched.)
    if ((pass == Pass::kLater || since_first_) && type != DT_DIR && type != DT_LNK &&
        type != DT_FIFO && type != DT_SOCK) {
      CheckPrivileges(
          at.fd.get(), entry, [&] { return shown(); }, pass == Pass::kFirst ? &since_ : nullptr);
    }
    if (type == DT_FIFO || type == DT_CHR || type == DT_BLK || type == DT_UNKNOWN) {
      std::vector<std::string_view> in;
      if (parent >= 0) in = Rel(parent).value_or(std::vector<std::string_view>{});
      for (const auto& l : levels) in.emplace_back(l.name);
      if (parent == -1) in.erase(in.begin());  // (the walk's first level is the folder itself)
      if (HostOpens(std::move(in), entry))
        CheckSpecial(at.fd.get(), entry, [&] { return shown(); });
      if (type != DT_UNKNOWN) continue;
    }
    if (OtherVcs(entry) && !OtherVcsStays(at.fd.get(), entry, pass, [&] { return shown(); })) {
      continue;
    }
    if (type != DT_DIR && type != DT_UNKNOWN) continue;
    // A bare repository's hooks, submodules and worktrees are guarded as a .git's are.
    if (at.wd >= 0 && watched_.at(at.wd).owner == at.wd && RunsPrograms(entry)) continue;
    Fd sub(OpenToWatch(at.fd.get(), entry, [&] { return shown(entry); }));
    if (!sub.ok()) {
      // Not a folder (a link), or gone; or this process holds all the descriptors it may
      // (folders the guard could not watch are kept open while walked).
      if ((errno == EMFILE || errno == ENFILE) && !std::exchange(said_no_descriptors, true)) {
        say_(Cat("cannot watch ", shown(entry), " and what is below it: ", std::strerror(errno),
                 "; do not run git there"));
      }
      continue;
    }
    enter(at.wd, entry, std::move(sub));
  }
}

// In a folder the guard could not watch: a .git, or a repository's HEAD, there at the start is
// taken for the user's; one found on a later walk is set aside.
void FolderGuard::Unwatched(int dir_fd, const std::string& shown, const char* entry, Pass pass) {
  struct stat st;
  if (::fstatat(dir_fd, entry, &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  std::pair<dev_t, ino_t> key{st.st_dev, st.st_ino};
  if (pass == Pass::kFirst &&
      (!first_known_ || first_known_->count(KnownLine(st.st_dev, st.st_ino)))) {
    unwatched_known_.insert(key);
    return;
  }
  if (unwatched_known_.count(key)) return;
  try {
    std::string at = MoveAside(dir_fd, shown, entry);
    say_(Cat("set aside ", std::string(entry) == ".git" ? "a .git" : "the HEAD of a repository",
             " that appeared in a folder the guard could not watch: ", at));
  } catch (const Error& e) {
    say_(Cat("could not set aside what appeared in ", shown, " (", e.what(),
             "): do not run git there"));
  }
}

// Shared project `name` of projects folder `folder`: its .git file put back if it is not ss's,
// and said.
void FolderGuard::Hold(size_t folder, const std::string& name) {
  std::string dir = Cat(folders_[folder].path, "/", name);
  try {
    Holding done = HoldRepository(dir, name, false);
    for (const auto& line : done.said) say_(Cat("project '", name, "': ", line));
  } catch (const Error& e) {
    say_(Cat("project '", name, "': could not put its .git file back (", e.what(),
             "): do not run git in ", DisplayPath(dir), " before a session has"));
  }
}

int FolderGuard::Watch(size_t folder, int parent, const std::string& name, int dir_fd, bool repo,
                       int owner) {
  struct stat st;
  if (::fstat(dir_fd, &st) != 0) return -1;
  int wd = platform::AddFolderWatch(watch_.get(), dir_fd);
  if (wd < 0) {
    if (errno == ENOSPC || errno == ENOMEM) Full(folder);
    return -1;
  }
  Watched w{folder, parent, name, st.st_dev, st.st_ino, repo, owner};
  // A folder watched already (walked again, or under another name: found by the new one).
  if (auto old = watched_.find(wd); old != watched_.end()) {
    if (old->second.parent != -1) children_.erase({old->second.parent, old->second.name});
    if (owner < 0 && old->second.dev == st.st_dev && old->second.ino == st.st_ino) {
      w.owner = old->second.owner;
    }
  }
  watched_[wd] = std::move(w);
  if (parent != -1) children_[{parent, name}] = wd;
  if (repo) repositories_.at(owner).watches.push_back(wd);
  return wd;
}

void FolderGuard::WatchFile(int owner, int dir_fd, const std::string& name) {
  Fd fd(platform::OpenToLook(dir_fd, name.c_str(), false));
  struct stat st;
  if (!fd.ok() || ::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode)) return;
  int wd = platform::AddFileWatch(watch_.get(), fd.get());
  if (wd < 0) {
    if (errno == ENOSPC || errno == ENOMEM) Full(watched_.at(owner).folder);
    return;
  }
  File& f = files_[wd];
  f.name = name;
  if (f.owners.insert(owner).second) repositories_.at(owner).watches.push_back(wd);
}

void FolderGuard::Full(size_t folder) {
  if (full_) return;
  full_ = true;
  say_(
      Cat("cannot watch more folders (the system's limit of watches is reached): what the "
          "sandbox makes in folders not yet watched in ",
          DisplayPath(folders_[folder].path), " is looked for every ", kFullRescanSeconds,
          " s, not at once"));
}

// Watched folder `wd`, found now as `name` in watched folder `parent`.
void FolderGuard::Reparent(int wd, int parent, const std::string& name) {
  Watched& m = watched_.at(wd);
  children_.erase({m.parent, m.name});
  m.parent = parent;
  m.name = name;
  children_[{parent, name}] = wd;
}

// Guards the .git in watched folder `at` (for kBare, the folder itself) as it is now.
void FolderGuard::Guard(int at, int dir_fd, Kind kind) {
  struct stat st;
  if (::fstatat(dir_fd, kind == Kind::kBare ? "." : ".git", &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (Same(at, dir_fd, kind)) return;  // guarded already
  Unguard(at);
  repositories_[at] = Repository{kind, st.st_dev, st.st_ino, {}, {}};
  Repository& r = repositories_[at];
  if (S_ISREG(st.st_mode)) {
    WatchFile(at, dir_fd, ".git");
    // Where it leads is what names programs.
    std::string problem;
    r.print = ReadSmallFileAt(dir_fd, ".git", 4096, &problem).value_or("");
  } else if (kind == Kind::kBare) {
    watched_.at(at).owner = at;
    GuardGitDir(at, dir_fd, at, 0, "", repositories_[at].print);
  } else if (kind == Kind::kGit && S_ISDIR(st.st_mode)) {
    Fd git(OpenDirAt(dir_fd, ".git"));
    int g = git.ok() ? Watch(watched_.at(at).folder, at, ".git", git.get(), true, at) : -1;
    if (g >= 0) GuardGitDir(g, git.get(), at, 0, "", repositories_[at].print);
  }
}

// A repository's line in Known(); a folder of the user's the guard could not watch (its .git or
// HEAD) is known by its inode alone.
std::string FolderGuard::KnownLine(const Repository& r) {
  return Sha256Hex(Cat(static_cast<int>(r.kind), " ", r.dev, " ", r.ino, "\n", r.print));
}
std::string FolderGuard::KnownLine(dev_t dev, ino_t ino) {
  return Cat("unwatched ", dev, " ", ino);
}

// At the first walk, whether what stands in watched folder `at` (its .git; for kBare, the
// folder) is the user's: all that is there when the guard starts with the sandbox; once it is
// started again while the sandbox ran, only what its first run found, unchanged. Guarded if so.
bool FolderGuard::Trusted(int at, int dir_fd, Kind kind) {
  Guard(at, dir_fd, kind);
  auto r = repositories_.find(at);
  if (!first_known_ || (r != repositories_.end() && first_known_->count(KnownLine(r->second)))) {
    return true;
  }
  Unguard(at);
  return false;
}

std::set<std::string> FolderGuard::Known() const {
  std::set<std::string> known;
  for (const auto& [at, r] : repositories_) {
    if (r.kind != Kind::kHeld) known.insert(KnownLine(r));
  }
  for (const auto& [dev, ino] : unwatched_known_) known.insert(KnownLine(dev, ino));
  for (const auto& [id, print] : other_vcs_) known.insert(OtherVcsKnownLine(id, print));
  known.insert(Cat(kSinceLine, FormatTimespec(since_)));
  return known;
}

// A repository's folder (watch `wd`, open as `fd`): its settings and common directory, its
// hooks, and the folders of its submodules and linked worktrees, which are repositories' folders
// too (a folder there without a HEAD is part of a submodule's name).
// `print` gets a line for each of those files and folders (its inode and change time), so that
// what changed while the system dropped events is seen (Rescan).
void FolderGuard::GuardGitDir(int wd, int fd, int owner, int depth, const std::string& rel,
                              std::string& print) {
  auto file = [&](int in, const std::string& name, const std::string& shown) {
    struct stat st;
    if (::fstatat(in, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
    print += Cat(shown, " ", st.st_ino, " ", st.st_mode, " ", st.st_ctim.tv_sec, ".",
                 st.st_ctim.tv_nsec, "\n");
    WatchFile(owner, in, name);
  };
  struct stat st;
  bool gitdir = depth == 0 || ::fstatat(fd, "HEAD", &st, AT_SYMLINK_NOFOLLOW) == 0;
  size_t folder = watched_.at(wd).folder;
  if (gitdir) {
    for (const char* name : {"config", "config.worktree", "commondir"}) {
      file(fd, name, Cat(rel, name));
    }
  }
  if (depth > 32) return;
  for (const auto& [name, type] : ReadDirAt(fd)) {
    if (gitdir ? !RunsPrograms(name) : (type != DT_DIR && type != DT_UNKNOWN)) continue;
    Fd sub(OpenDirAt(fd, name));
    if (!sub.ok()) continue;
    int s = Watch(folder, wd, name, sub.get(), true, owner);
    if (s < 0) continue;
    print += Cat(rel, name, "/\n");
    if (gitdir && name == "hooks") {
      // Git runs a hook by its name only: the samples it ships run nowhere.
      for (const auto& hook : ReadDirAt(sub.get())) {
        if (!hook.first.ends_with(".sample"))
          file(sub.get(), hook.first, Cat(rel, "hooks/", hook.first));
      }
    } else {
      GuardGitDir(s, sub.get(), owner, depth + 1, Cat(rel, name, "/"), print);
    }
  }
}

void FolderGuard::Unguard(int at) {
  auto r = repositories_.find(at);
  if (r == repositories_.end()) return;
  const std::vector<int> watches = std::move(r->second.watches);
  repositories_.erase(r);
  if (auto top = watched_.find(at); top != watched_.end() && top->second.owner == at) {
    top->second.owner = -1;  // a bare repository's folder: a folder of the tree as any
  }
  for (int wd : watches) {
    if (auto f = files_.find(wd); f != files_.end()) {
      if (f->second.owners.erase(at) != 0 && f->second.owners.empty()) {
        platform::RemoveFolderWatch(watch_.get(), wd);
        files_.erase(f);
      }
    } else if (auto w = watched_.find(wd);
               w != watched_.end() && w->second.repo && w->second.owner == at) {
      if (w->second.parent != -1) children_.erase({w->second.parent, w->second.name});
      platform::RemoveFolderWatch(watch_.get(), wd);
      watched_.erase(w);
    }
  }
}

// Whether what stands in `at` (its .git; for kBare, the folder) is the very one guarded there as
// `kind`, not a new one given its inode's number after the guarded one was removed (events
// dropped meanwhile): the kernel gives each its own watch.
bool FolderGuard::Same(int at, int dir_fd, Kind kind) {
  auto r = repositories_.find(at);
  struct stat st;
  if (r == repositories_.end() || r->second.kind != kind ||
      ::fstatat(dir_fd, kind == Kind::kBare ? "." : ".git", &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      st.st_dev != r->second.dev || st.st_ino != r->second.ino) {
    return false;
  }
  if (kind == Kind::kBare) return true;  // the folder's own watch is `at`
  int wd = -1;
  bool same = true;  // a link: changed only by being replaced, which is seen
  if (S_ISREG(st.st_mode)) {
    Fd fd(platform::OpenToLook(dir_fd, ".git", false));
    wd = fd.ok() ? platform::AddFileWatch(watch_.get(), fd.get()) : -1;
    auto f = files_.find(wd);
    same = f != files_.end() && f->second.owners.count(at) != 0;
  } else if (S_ISDIR(st.st_mode)) {
    Fd git(OpenDirAt(dir_fd, ".git"));
    wd = git.ok() ? platform::AddFolderWatch(watch_.get(), git.get()) : -1;
    auto c = children_.find({at, ".git"});
    same = c != children_.end() && c->second == wd;
  }
  if (!same && wd >= 0 && !files_.count(wd) && !watched_.count(wd)) {
    platform::RemoveFolderWatch(watch_.get(), wd);
  }
  return same;
}

std::optional<std::vector<std::string_view>> FolderGuard::Rel(int wd) const {
  std::vector<std::string_view> names;
  // (More names than watches: a loop, which a move the guard has not read yet may make.)
  for (int at = wd;;) {
    auto it = watched_.find(at);
    if (it == watched_.end() || it->second.parent == -2 || names.size() > watched_.size()) {
      return std::nullopt;
    }
    if (it->second.parent == -1) break;
    names.emplace_back(it->second.name);
    at = it->second.parent;
  }
  std::reverse(names.begin(), names.end());
  return names;
}

std::string FolderGuard::Shown(int wd) const {
  const Watched& w = watched_.at(wd);
  return ElidedPath(DisplayPath(folders_[w.folder].path),
                    Rel(wd).value_or(std::vector<std::string_view>{"?"}), kShownFolders);
}

std::string FolderGuard::Shown(int in, const std::string& name) const {
  return Cat(Shown(in), "/", name);
}

bool FolderGuard::ProjectTop(int wd) const {
  const Watched& w = watched_.at(wd);
  return folders_[w.folder].projects && !w.repo && w.parent >= 0 && watched_.count(w.parent) &&
         watched_.at(w.parent).parent == -1;
}

// The watched folder by its path, never through a link, and only if it is still that folder.
Fd FolderGuard::Open(int wd) const {
  auto w_it = watched_.find(wd);
  if (w_it == watched_.end() || w_it->second.parent == -2) return Fd();
  for (const auto& [at, fd] : recent_) {
    struct stat st;
    if (at == wd && ::fstat(fd.get(), &st) == 0 && st.st_nlink > 0 &&
        st.st_dev == w_it->second.dev && st.st_ino == w_it->second.ino) {
      return Fd(::fcntl(fd.get(), F_DUPFD_CLOEXEC, 0));
    }
  }
  auto rel = Rel(wd);
  if (!rel) return Fd();
  const Watched& w = watched_.at(wd);
  // Through folders the sandbox may have made unreadable (searching them is enough): the last
  // one readable when it can be.
  // The folder's own path is followed as the user gave it ("/." is never a link).
  Fd fd(platform::OpenToLook(AT_FDCWD, Cat(folders_[w.folder].path, "/.").c_str(), true));
  for (std::string_view part : *rel) {
    if (!fd.ok()) break;
    fd = Fd(platform::OpenToLook(fd.get(), std::string(part).c_str(), true));
  }
  struct stat st;
  if (!fd.ok() || ::fstat(fd.get(), &st) != 0 || st.st_dev != w.dev || st.st_ino != w.ino) {
    return Fd();
  }
  Fd readable(::openat(fd.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  return readable.ok() ? std::move(readable) : std::move(fd);
}

// Folder `name` of `dir_fd`, open to be read and watched. One the guard cannot read (the
// sandbox took the permission away; the host's git needs only to search it) is made readable
// for its owner first, and said.
void FolderGuard::Recent(int wd, int fd) {
  for (auto it = recent_.begin(); it != recent_.end(); ++it) {
    if (it->first == wd) {
      recent_.erase(it);
      break;
    }
  }
  Fd copy(::fcntl(fd, F_DUPFD_CLOEXEC, 0));
  if (!copy.ok()) return;
  recent_.emplace_front(wd, std::move(copy));
  if (recent_.size() > kRecentFolders) recent_.pop_back();
}

Fd FolderGuard::OpenToWatch(int dir_fd, const std::string& name,
                            const std::function<std::string()>& shown) {
  Fd fd(OpenDirAt(dir_fd, name));
  if (fd.ok() || errno != EACCES) return fd;
  Fd path(platform::OpenToLook(dir_fd, name.c_str(), true));
  if (!path.ok()) return Fd();
  // Through the descriptor: the name may lead elsewhere by now.
  if (platform::ChangeModeBits(path.get(), S_IRUSR | S_IXUSR, 0) != 0) {
    say_(Cat("cannot watch ", shown(), ": ", std::strerror(EACCES),
             " (and its mode cannot be changed: ", std::strerror(errno), ")"));
    return Fd();
  }
  say_(Cat("made ", shown(), " readable for you to watch it (the sandbox took that away)"));
  return Fd(::openat(path.get(), ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
}

void FolderGuard::CheckGit(int wd, int dir_fd, Pass pass, bool rewritten) {
  const Watched w = watched_.at(wd);
  struct stat st;
  if (::fstatat(dir_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) != 0) {
    // Gone: what comes in its place (its inode's number too) is new. A held project's is put
    // back by the session's end, never here: the user may be removing the project.
    Unguard(wd);
    return;
  }
  bool known = !rewritten && Same(wd, dir_fd, Kind::kGit);
  if (ProjectTop(wd)) {
    // A shared project's: its .git file is ss's (held_repository.hpp), put back whatever the
    // sandbox did. A project whose repository ss does not hold: what was there at the start is
    // the user's (the first session holds it); one that appears is set aside as a session's
    // start would, with how to give it to ss.
    const std::string& name = w.name;
    if (!IsHeld(name)) {
      // ss's own file, its repository about to be put in place (ss new): leads nowhere else.
      std::string problem;
      if (S_ISREG(st.st_mode) &&
          ReadSmallFileAt(dir_fd, ".git", 4096, &problem).value_or("") == HeldGitFile(name)) {
        return;
      }
      if (known || (pass == Pass::kFirst && Trusted(wd, dir_fd, Kind::kGit))) return;
      if (PathExists(Cat(RepositoriesDir(), "/.left-", name))) return;
    }
    if (IsValidProjectName(name)) {  // (at the start too: the sandbox may have run without it)
      Hold(w.folder, name);
      Guard(wd, dir_fd, Kind::kHeld);  // the file as it is now
      return;
    }
  } else if (w.parent == -1 && (top_repository_[w.folder] || pass == Pass::kFirst)) {
    // The repository a folder was shared with (ss . --no-copy), said each session; a .git in
    // the projects folder itself is set aside by each session, and by this guard once it runs.
    return;
  } else if (known || (pass == Pass::kFirst && Trusted(wd, dir_fd, Kind::kGit))) {
    // One of the user's, there before the sandbox ran: what in it names programs is watched.
    return;
  }
  Unguard(wd);
  const char* what = S_ISDIR(st.st_mode)   ? "a repository"
                     : S_ISREG(st.st_mode) ? "a .git file"
                     : S_ISLNK(st.st_mode) ? "a .git link"
                                           : "a .git";
  try {
    std::string at = MoveGitAside(dir_fd, Shown(wd));
    // (At the first walk: a guard started again, and this is not what the first one knew.)
    say_(Cat("set aside ", what,
             pass == Pass::kFirst
                 ? " that appeared or changed in a shared folder while the sandbox ran unwatched: "
                 : " that appeared in a shared folder while the sandbox ran: ",
             at));
  } catch (const Error& e) {
    if (::fstatat(dir_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
      say_(Cat("could not set aside ", what, " that appeared in ", Shown(wd), " (", e.what(),
               "): do not run git there"));
    }
  }
}

bool FolderGuard::HostOpens(std::vector<std::string_view> in, const std::string& name) const {
  if (name.find(".refused-") != std::string::npos) return false;  // set aside already
  if (GitOpens(ToLower(name))) return true;
  in.emplace_back(name);
  std::string path;
  for (std::string_view part : in) path += Cat(path.empty() ? "" : "/", part);
  return opened_.Why(path).has_value();
}

bool FolderGuard::OtherVcsStays(int dir_fd, const std::string& name, Pass pass,
                                const std::function<std::string()>& shown) {
  struct stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return false;
  std::pair<dev_t, ino_t> id{st.st_dev, st.st_ino};
  Fd vcs(S_ISDIR(st.st_mode) ? OpenDirAt(dir_fd, name) : -1);
  std::string print = vcs.ok() ? OtherVcsPrint(vcs.get(), name) : std::string();
  auto known = other_vcs_.find(id);
  if (known != other_vcs_.end() && known->second == print) return true;
  // At the first walk, all there is the user's; a guard started again takes only what its
  // first run found, unchanged.
  if (known == other_vcs_.end() && pass == Pass::kFirst &&
      (!first_known_ || first_known_->count(OtherVcsKnownLine(id, print)))) {
    other_vcs_[id] = print;
    // Its settings watched themselves: written through another name (a hard link), seen too.
    if (vcs.ok()) {
      OtherVcsSettings(vcs.get(), name, [&](int in, const char* f) {
        Fd fd(platform::OpenToLook(in, f, false));
        struct stat fst;
        if (!fd.ok() || ::fstat(fd.get(), &fst) != 0 || !S_ISREG(fst.st_mode)) return;
        if (int wd = platform::AddFileWatch(watch_.get(), fd.get()); wd >= 0) {
          other_vcs_files_[wd] = id;
        }
      });
    }
    return true;
  }
  const bool changed = known != other_vcs_.end();
  if (changed) {
    other_vcs_.erase(known);
    for (auto f = other_vcs_files_.begin(); f != other_vcs_files_.end();) {
      if (f->second != id) {
        ++f;
        continue;
      }
      if (!files_.count(f->first)) platform::RemoveFolderWatch(watch_.get(), f->first);
      f = other_vcs_files_.erase(f);
    }
  }
  try {
    std::string at = MoveAside(dir_fd, shown(), name);
    say_(Cat("set aside ", OtherVcsName(name),
             changed                ? " whose settings changed while the sandbox ran: "
             : pass == Pass::kFirst ? " that appeared or changed in a shared folder while the "
                                      "sandbox ran unwatched: "
                                    : " that appeared in a shared folder while the sandbox ran: ",
             at));
  } catch (const Error& e) {
    say_(Cat("could not set aside ", OtherVcsName(name), " in ", shown(), " (", e.what(),
             "): do not run ", name == ".hg" ? "hg" : "jj", " there"));
  }
  return false;
}

bool FolderGuard::LookAgainAtOtherVcs(int vcs) {
  const Watched v = watched_.at(vcs);
  Fd in = Open(v.parent);
  if (!in.ok()) return false;
  OtherVcsStays(in.get(), v.name, Pass::kLater, [&] { return Shown(v.parent); });
  return true;
}

int FolderGuard::OtherVcsOf(int wd) const {
  const Watched& w = watched_.at(wd);
  if (w.parent < 0) return -1;  // (the top of a shared folder, or moved out of it)
  if (OtherVcs(w.name)) return wd;
  if (w.name == "repo" && watched_.count(w.parent) && watched_.at(w.parent).name == ".jj" &&
      watched_.at(w.parent).parent >= 0) {
    return w.parent;
  }
  return -1;
}

void FolderGuard::CheckPrivileges(int dir_fd, const std::string& name,
                                  const std::function<std::string()>& shown,
                                  const struct timespec* since) {
  struct stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      (since && AtOrAfter(*since, st.st_ctim))) {
    return;
  }
  if (S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode)) {
    auto aside = devices_aside_.find({st.st_dev, st.st_ino});
    if (aside != devices_aside_.end() && aside->second == name) return;
    try {
      std::string at = MoveAside(dir_fd, shown(), name);
      devices_aside_[{st.st_dev, st.st_ino}] = at.substr(at.rfind('/') + 1);
      say_(
          Cat("set aside a device file the sandbox made (on the host it opens the device for "
              "anyone who can reach it): ",
              at));
    } catch (const Error& e) {
      say_(Cat("could not set aside the device file ", shown(), "/", name, " (", e.what(),
               "): do not let anyone else reach it"));
    }
    return;
  }
  if (!S_ISREG(st.st_mode)) return;
  const bool set_id = (st.st_mode & (S_ISUID | S_ISGID)) != 0;
  const bool capable = platform::HasFileCapabilities(dir_fd, name.c_str());
  if (!set_id && !capable) return;
  // Through a descriptor: the name may lead elsewhere by now.
  Fd fd(platform::OpenToLook(dir_fd, name.c_str(), false));
  struct stat now;
  if (fd.ok() && (::fstat(fd.get(), &now) != 0 || !S_ISREG(now.st_mode))) return;  // replaced
  if (!fd.ok() && errno == ENOENT) return;
  // took: the call's result; what: what it took off; runs: how the file would run on the host.
  auto report = [&](bool took, const char* what, const char* runs) {
    const int error = errno;  // (before shown() may change it)
    if (took) {
      say_(Cat("took the ", what, " off a file the sandbox gave them (on the host it would run ",
               runs, " for anyone who can reach it): ", shown(), "/", name));
    } else {
      say_(Cat("could not take the ", what, " off ", shown(), "/", name, " (", std::strerror(error),
               "): do not let anyone else reach it"));
    }
  };
  if (set_id) {
    report(fd.ok() && platform::ChangeModeBits(fd.get(), 0, S_ISUID | S_ISGID) == 0,
           "setuid and setgid bits", "as you");
  }
  if (capable) {
    report(fd.ok() && platform::TakeOffFileCapabilities(fd.get()) == 0, "file capabilities",
           "with them");
  }
}

void FolderGuard::CheckSpecial(int dir_fd, const std::string& name,
                               const std::function<std::string()>& shown) {
  struct stat st;
  if (::fstatat(dir_fd, name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) return;
  if (!S_ISFIFO(st.st_mode) && !S_ISCHR(st.st_mode) && !S_ISBLK(st.st_mode)) return;
  const char* what = S_ISFIFO(st.st_mode) ? "a fifo" : "a device file";
  try {
    std::string at = MoveAside(dir_fd, shown(), name);
    say_(Cat("set aside ", what,
             " named as a file the host's tools open on their own (they would wait on it for "
             "ever): ",
             at));
  } catch (const Error& e) {
    say_(Cat("could not set aside ", what, " in ", shown(), " (", e.what(), "): ", name,
             " there keeps the host's tools waiting"));
  }
}

// A folder that appeared as git takes for a repository without a .git, whose config it obeys
// when run there or below. Its HEAD is set aside, which makes it no repository; in a folder ss
// set aside already, without a word.
void FolderGuard::CheckBare(int wd, int dir_fd) {
  if (auto r = repositories_.find(wd); r != repositories_.end() && r->second.kind == Kind::kBare) {
    return;  // the user's, guarded
  }
  if (!LooksLikeRepository(dir_fd)) return;
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

// Whether what happened in folder `w` of a guarded repository may make its git run a program:
// anything in its hooks, what names programs (RunsPrograms), a folder made in its submodules' or
// linked worktrees' part (one more repository's folder).
bool FolderGuard::NamesPrograms(const Watched& w, const platform::FolderEvent& e) const {
  if (e.left) return false;  // what arrives in its place is seen
  if (w.repo && w.name == "hooks") return true;
  if (RunsPrograms(e.name)) return true;
  bool top = !w.repo || (w.name == ".git" && w.parent == w.owner);
  return e.folder && e.arrived && !top;
}

// Something that names programs changed in guarded repository `owner` (`what`): a held .git
// file is put back, one of the user's repositories set aside.
void FolderGuard::Changed(int owner, const std::string& what) {
  auto r = repositories_.find(owner);
  if (r == repositories_.end()) return;
  const Repository repo = r->second;
  Fd dir = Open(owner);
  if (!dir.ok()) {
    // Moved meanwhile (its new name comes later), or out of the tree: acted on once found.
    pending_[owner] = what;
    return;
  }
  if (repo.kind == Kind::kHeld) {
    CheckGit(owner, dir.get(), Pass::kLater, true);
    return;
  }
  bool bare = repo.kind == Kind::kBare;
  struct stat st;
  if (::fstatat(dir.get(), bare ? "." : ".git", &st, AT_SYMLINK_NOFOLLOW) != 0 ||
      st.st_dev != repo.dev || st.st_ino != repo.ino) {
    return;
  }
  Unguard(owner);
  try {
    std::string at =
        bare ? MoveAside(dir.get(), Shown(owner), "HEAD") : MoveGitAside(dir.get(), Shown(owner));
    say_(Cat("set aside ", bare ? "the HEAD of a repository" : "a repository", " whose ", what,
             " changed while the sandbox ran: ", at));
  } catch (const Error& e) {
    say_(Cat("could not set aside ", bare ? "the HEAD of a repository" : "a repository", " whose ",
             what, " changed in ", Shown(owner), " (", e.what(), "): do not run git there"));
  }
  if (bare) {
    // No repository now: its hooks, submodules and worktrees are folders of the tree.
    const Watched w = watched_.at(owner);
    Walk(w.folder, w.parent, w.name, std::move(dir), Pass::kLater);
  }
}

// The system dropped events: every folder is walked again, and each repository of the user's
// looked at as it is now (what names programs in it may have changed unseen).
void FolderGuard::Rescan() {
  for (size_t i = 0; i < folders_.size(); ++i) {
    Fd top(::open(folders_[i].path.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (top.ok()) Walk(i, -1, "", std::move(top), Pass::kLater);
  }
  const auto guarded = repositories_;
  for (const auto& [at, before] : guarded) {
    Fd dir = before.kind == Kind::kHeld ? Fd() : Open(at);
    if (!dir.ok() || !repositories_.count(at)) continue;  // (a held .git: read by the walk)
    Unguard(at);
    Guard(at, dir.get(), before.kind);
    auto now = repositories_.find(at);
    if (now != repositories_.end() && now->second.print != before.print) {
      Changed(at, "settings or hooks");
    }
  }
}

bool FolderGuard::Step(int timeout_ms) {
  // A removed folder's watch ends only once nothing holds it open.
  std::erase_if(recent_, [](const auto& r) {
    struct stat st;
    return ::fstat(r.second.get(), &st) != 0 || st.st_nlink == 0;
  });
  // Out of watches: every folder is walked again now and then (and watched, if it can be now).
  if (full_) {
    auto now = std::chrono::steady_clock::now();
    if (now - last_rescan_ >= std::chrono::seconds(kFullRescanSeconds)) {
      last_rescan_ = now;
      Rescan();
    }
    if (timeout_ms < 0 || timeout_ms > kFullRescanSeconds * 1000) {
      timeout_ms = kFullRescanSeconds * 1000;
    }
  }
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
    if (auto f = files_.find(e.watch); f != files_.end()) {
      if (e.gone) {
        files_.erase(f);  // its last name removed: its folder's watch said so
        continue;
      }
      const File file = f->second;
      for (int owner : file.owners) Changed(owner, file.name);
      continue;
    }
    if (auto f = other_vcs_files_.find(e.watch); f != other_vcs_files_.end()) {
      // A setting of one of the user's .hg or .jj folders: that folder looked at again.
      const std::pair<dev_t, ino_t> id = f->second;
      if (e.gone) other_vcs_files_.erase(f);
      for (const auto& [wd, w] : watched_) {
        if (w.dev == id.first && w.ino == id.second && OtherVcs(w.name) && w.parent >= 0) {
          if (!LookAgainAtOtherVcs(wd)) rescan = true;
          break;
        }
      }
      continue;
    }
    auto it = watched_.find(e.watch);
    if (it == watched_.end()) continue;
    if (e.gone) {
      if (it->second.parent >= 0) children_.erase({it->second.parent, it->second.name});
      watched_.erase(it);
      continue;
    }
    if (it->second.owner >= 0 && NamesPrograms(it->second, e)) {
      Changed(it->second.owner, it->second.repo && it->second.name == "hooks" ? "hooks" : e.name);
      continue;
    }
    if (it->second.repo) continue;
    // In a user's .hg or .jj: its settings looked at again.
    if (int vcs = e.name.empty() ? -1 : OtherVcsOf(e.watch); vcs >= 0) {
      if (!LookAgainAtOtherVcs(vcs)) rescan = true;  // moved meanwhile: looked at where it is
    }
    // A .hg or .jj made or moved in.
    if (e.arrived && OtherVcs(e.name)) {
      Fd dir = Open(e.watch);
      if (!dir.ok()) {
        rescan = true;
        continue;
      }
      if (!OtherVcsStays(dir.get(), e.name, Pass::kLater, [&] { return Shown(e.watch); })) {
        continue;
      }
    }
    if (e.name == ".git" && e.left) {
      // One of the user's moved from its name: no longer known (it would come back changed).
      if (auto r = repositories_.find(e.watch);
          r != repositories_.end() && r->second.kind == Kind::kGit) {
        Unguard(e.watch);
      }
      continue;
    }
    if (e.folder && e.left) {
      if (auto c = children_.find({e.watch, e.name}); c != children_.end()) {
        moved_out[e.cookie] = c->second;
      }
      continue;
    }
    if (e.folder && (e.arrived || (e.mode && !children_.count({e.watch, e.name}))) &&
        e.name != ".git") {
      Fd dir = Open(e.watch);
      if (!dir.ok()) rescan = true;
      if (auto from = moved_out.find(e.cookie); e.cookie != 0 && from != moved_out.end()) {
        // Moved within the tree: the same folders, watched already, under a new name. What is
        // in them was looked at as it appeared, unless the folder could not be found then.
        int moved = from->second;
        Reparent(moved, e.watch, e.name);
        moved_out.erase(from);
        if (Fd sub = Open(moved); sub.ok()) CheckBare(moved, sub.get());
      } else if (Fd sub(dir.ok()
                            ? OpenToWatch(dir.get(), e.name, [&] { return Shown(e.watch, e.name); })
                            : Fd());
                 sub.ok()) {
        // Made, moved in, or one the guard could not read until its mode changed.
        Walk(it->second.folder, e.watch, e.name, std::move(sub), Pass::kLater);
      }
      // objects or refs made last: the folder they are in may be a repository now.
      if (dir.ok() && (e.name == "objects" || e.name == "refs")) CheckBare(e.watch, dir.get());
      continue;
    }
    // A file made, moved in or changed in mode: setuid bits, capabilities, a device; a fifo the
    // host's tools would open.
    if (!e.folder && !e.left && !e.name.empty() && (e.arrived || e.mode)) {
      if (Fd dir = Open(e.watch); dir.ok()) {
        CheckPrivileges(dir.get(), e.name, [&] { return Shown(e.watch); });
        if (e.arrived && e.name != ".git" &&
            HostOpens(Rel(e.watch).value_or(std::vector<std::string_view>{}), e.name)) {
          CheckSpecial(dir.get(), e.name, [&] { return Shown(e.watch); });
        }
      }
    }
    if (e.mode) continue;
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
      if (dir.ok()) {
        CheckBare(e.watch, dir.get());
      } else {
        rescan = true;  // moved meanwhile: looked at where it is
      }
    }
  }
  // Moved out of the tree (or paired in a later read: then walked again as new).
  for (const auto& [cookie, wd] : moved_out) {
    auto it = watched_.find(wd);
    if (it == watched_.end()) continue;
    children_.erase({it->second.parent, it->second.name});
    it->second.parent = -2;
  }
  for (const auto& [owner, what] : std::exchange(pending_, {})) {
    if (watched_.count(owner)) {
      Changed(owner, what);
    } else {
      Unguard(owner);  // its folder is gone
    }
  }
  if (std::exchange(walk_again_, false) || rescan) Rescan();
  return !watched_.empty();
}

}  // namespace ss
