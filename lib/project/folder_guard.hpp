// The folders a running sandbox shares with the host, watched from the host for repositories.
//
// A `.git` in a shared folder is read by the host's git (a prompt, an editor entering the folder)
// and obeyed: its settings and hooks run programs. Whatever the sandbox puts there must never be
// read so. ss puts a shared project's .git file back before and after each session
// (held_repository.hpp); while the sandbox runs, this guard does it as soon as the kernel says
// something changed (inotify), in every folder of every shared tree:
//
//   - a held project's .git replaced, rewritten or removed: set aside and put back
//     (HoldRepository);
//   - a .git made or moved in anywhere else, or a .git file there rewritten: set aside
//     (MoveGitAside), so the host's git never finds it;
//   - a Mercurial or Jujutsu repository (.hg, .jj: a prompt runs hg or jj too, which obey the
//     repository's settings) made or moved in after the guard started: set aside; one of the
//     user's whose settings change: set aside whole;
//   - a file made setuid or setgid (on the host it would run as the user for anyone who can
//     reach it): those bits taken off;
//   - a fifo or a device file named as a file the host's tools open on their own when they
//     enter a folder (.gitignore, .envrc, .vscode/settings.json, ...): set aside, or git, an
//     editor or direnv would wait on it for ever;
//   - a repository that was in a subfolder when the guard started (one of the user's) whose
//     settings, common directory or hooks change, in it or in its submodules' and linked
//     worktrees' folders, through any name (a hard link): set aside whole; a folder of the
//     user's that git takes for a repository (a bare one): its HEAD set aside.
//
// Left as they are: the repository a shared folder given with `ss . --no-copy` or `ss run DIR`
// has at its top, and one ss leaves in a project's folder (submodules): both said each session.
// What the guard did is said through `say`, a line each.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "fd.hpp"
#include "host_exec.hpp"
#include "platform.hpp"

namespace ss {

struct GuardedFolder {
  std::string path;       // a host folder the sandbox may write
  bool projects = false;  // the projects folder, whose projects' .git files are ss's
};

class FolderGuard {
 public:
  // Watches every folder of `folders` (links never followed); the repositories found there now
  // are the user's. A guard started again while the sandbox ran is given what the first one knew
  // (Known()): only those of the repositories found now are the user's, unchanged; any other is
  // set aside as one that appeared. Throws ss::Error(69) when the system cannot watch folders.
  FolderGuard(std::vector<GuardedFolder> folders, std::function<void(const std::string&)> say,
              std::optional<std::set<std::string>> known = std::nullopt);
  // The user's repositories, a line each naming one as it is now (its identity and what in it
  // names programs, hashed): for a guard started again.
  std::set<std::string> Known() const;

  // Handles what happened, waiting up to `timeout_ms` (-1: for ever) for something to; false
  // once none of the folders is there any more.
  bool Step(int timeout_ms);
  int watched() const { return static_cast<int>(watched_.size()); }

 private:
  enum class Pass { kFirst, kLater };
  // What ss guards, and what a change there costs: a held project's .git file (put back), a
  // .git of the user's (set aside whole), a folder of the user's that git takes for a repository
  // without a .git (its HEAD set aside).
  enum class Kind { kHeld, kGit, kBare };
  struct Repository {
    Kind kind = Kind::kGit;
    dev_t dev = 0;  // its .git; for kBare, the folder itself
    ino_t ino = 0;
    std::string print;         // what in it names programs, as it was (GuardGitDir)
    std::vector<int> watches;  // of its folders and files
  };
  // A watched folder, known by its parent's watch and its name there (kept right as folders are
  // moved, so that ss finds it again by its path, checked to be the same folder).
  struct Watched {
    size_t folder = 0;  // in folders_
    int parent = -1;    // -1: the top of folders_[folder]; -2: moved out of the tree
    std::string name;
    dev_t dev = 0;
    ino_t ino = 0;
    bool repo = false;  // inside a guarded repository's folder, not a folder of the tree
    int owner = -1;     // the guarded repository (repositories_) it belongs to
  };
  // A file that names programs (a repository's settings, a hook, a .git file), watched itself:
  // written through any name (a hard link), linked or changed in mode, it is seen.
  struct File {
    std::string name;
    std::set<int> owners;  // in repositories_
  };

  void Walk(size_t folder, int parent, const std::string& name, Fd dir, Pass pass);
  int Watch(size_t folder, int parent, const std::string& name, int dir_fd, bool repo, int owner);
  void WatchFile(int owner, int dir_fd, const std::string& name);
  void Full(size_t folder);
  void Reparent(int wd, int parent, const std::string& name);
  void Guard(int at, int dir_fd, Kind kind);
  void GuardGitDir(int wd, int fd, int owner, int depth, const std::string& rel,
                   std::string& print);
  void Unguard(int at);
  bool Same(int at, int dir_fd, Kind kind);
  bool Trusted(int at, int dir_fd, Kind kind);
  static std::string KnownLine(const Repository& r);
  static std::string KnownLine(dev_t dev, ino_t ino);
  bool NamesPrograms(const Watched& w, const platform::FolderEvent& e) const;
  void Changed(int owner, const std::string& what);
  void CheckGit(int wd, int dir_fd, Pass pass, bool rewritten);
  void CheckBare(int wd, int dir_fd);
  // Whether the host's tools open entry `name` of a folder on their own (`in`: the folder's
  // names from the guarded folder down).
  bool HostOpens(std::vector<std::string_view> in, const std::string& name) const;
  // Entry `name` (.hg or .jj) of folder `dir_fd`: true when it stays, one of the user's as it
  // was (recorded so at the first walk); else set aside. `shown` makes the folder's path.
  bool OtherVcsStays(int dir_fd, const std::string& name, Pass pass,
                     const std::function<std::string()>& shown);
  // The watch of the .hg or .jj folder whose settings watched folder `wd` holds; -1 if none.
  int OtherVcsOf(int wd) const;
  // That folder (watch `vcs`) looked at again where it is; false when it cannot be found there.
  bool LookAgainAtOtherVcs(int vcs);
  // Entry `name` of folder `dir_fd` (`shown` makes the folder's path), when made or changed by
  // the sandbox (`since`: changed after then): a file loses its setuid and setgid bits and its
  // file capabilities; a device file is set aside.
  void CheckPrivileges(int dir_fd, const std::string& name,
                       const std::function<std::string()>& shown,
                       const struct timespec* since = nullptr);
  // Entry `name` of folder `dir_fd`, set aside if it is a fifo or a device file.
  void CheckSpecial(int dir_fd, const std::string& name, const std::function<std::string()>& shown);
  // Its names from the guarded folder down; nothing once it left the tree.
  std::optional<std::vector<std::string_view>> Rel(int wd) const;
  std::string Shown(int wd) const;
  std::string Shown(int in, const std::string& name) const;  // entry `name` of watched `in`
  bool ProjectTop(int wd) const;
  Fd Open(int wd) const;
  // `shown` makes the folder's path for a message, only when one is said.
  Fd OpenToWatch(int dir_fd, const std::string& name, const std::function<std::string()>& shown);
  void Recent(int wd, int fd);
  void Unwatched(int dir_fd, const std::string& shown, const char* entry, Pass pass);
  void Hold(size_t folder, const std::string& name);
  void Rescan();

  std::vector<GuardedFolder> folders_;
  HostExecRules opened_;  // the files the host's tools obey, which they open on their own
  std::vector<bool> top_repository_;  // each folder had a .git at its top when first watched
  std::function<void(const std::string&)> say_;
  Fd watch_;
  std::map<int, Watched> watched_;
  std::map<std::pair<int, std::string>, int> children_;  // (parent, name) -> watch
  std::map<int, Repository> repositories_;  // by the watch of the folder with the .git (or bare)
  std::map<int, File> files_;               // by watch
  std::map<int, std::string> pending_;      // repositories changed, not found where they were
  bool full_ = false;                       // the system's watches ran out
  bool walk_again_ = false;                 // a walk lost a folder that moved meanwhile
  std::set<std::pair<dev_t, ino_t>> unwatched_known_;  // the user's, in folders not watched
  // The user's .hg and .jj folders, by inode: what in them names programs, as it was.
  std::map<std::pair<dev_t, ino_t>, std::string> other_vcs_;
  std::map<int, std::pair<dev_t, ino_t>> other_vcs_files_;  // their settings, by watch: whose
  // The device files set aside, by inode: the name each was given (its arrival there is the
  // guard's own).
  std::map<std::pair<dev_t, ino_t>, std::string> devices_aside_;
  std::optional<std::set<std::string>> first_known_;  // what the guard's first run knew
  // When the guard's first run began (no file changed before has a later time: a file's time
  // is taken from a clock as fine or coarser): a setuid file changed since, found by a guard
  // started again, was made so while no guard watched.
  struct timespec since_ {};
  bool since_first_ = false;  // since_ is the first run's, given in first_known_
  std::chrono::steady_clock::time_point last_rescan_;
  // The folders walked last, open, by watch: a folder made in one made just before (a tree made
  // level by level) is found without opening every folder above it again (Open).
  std::deque<std::pair<int, Fd>> recent_;
};

}  // namespace ss
