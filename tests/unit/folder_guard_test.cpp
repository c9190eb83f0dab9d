// The guard of a running sandbox's shared folders, with the real kernel's notices: whatever is
// put in place of a held project's .git file is set aside and the file put back; a .git that
// appears anywhere else, however deep and however it got there, is set aside; the user's
// repositories found at the start stay, until something that runs programs changes in them.
#include "folder_guard.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/xattr.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <functional>
#include <optional>
#include <set>
#include <string>

#include "fd.hpp"
#include "fs.hpp"
#include "fs_at.hpp"
#include "gtest/gtest.h"
#include "held_repository.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "strings.hpp"

namespace ss {
namespace {

class FolderGuardTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("SS_HOME", home_.path().c_str(), 1);
    MakeDirs(ProjectsDir());
    MakeDirs(other_.path() + "/src");
  }
  void TearDown() override { ::unsetenv("SS_HOME"); }

  // `known`: a guard started again, given what the first one knew.
  std::unique_ptr<FolderGuard> Start(bool with_other = false,
                                     std::optional<std::set<std::string>> known = std::nullopt) {
    std::vector<GuardedFolder> folders = {{ProjectsDir(), true}};
    if (with_other) folders.push_back({other_.path(), false});
    return std::make_unique<FolderGuard>(
        folders, [this](const std::string& l) { said_.push_back(l); }, std::move(known));
  }
  // A file's permission bits, setuid and setgid among them; 0 when it is not there.
  static mode_t Mode(const std::string& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0 ? st.st_mode & 07777 : 0;
  }
  // Lets the guard handle what happened until `done` holds (2 s at most).
  bool Until(FolderGuard& guard, const std::function<bool()>& done) {
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    while (std::chrono::steady_clock::now() < end) {
      if (done()) return true;
      guard.Step(50);
    }
    return done();
  }
  // A held project `name`: its repository in repositories/, its .git file leading there.
  std::string Held(const std::string& name) {
    std::string dir = ProjectsDir() + "/" + name;
    MakeDirs(dir);
    MakeDirs(HeldRepositoryDir(name) + "/objects");
    AtomicWrite(dir + "/.git", HeldGitFile(name));
    return dir;
  }
  // A repository's folder (a .git) as git init makes it, and a bare repository.
  static void GitDir(const std::string& git) {
    MakeDirs(git + "/hooks");
    AtomicWrite(git + "/HEAD", "ref: refs/heads/main\n");
    AtomicWrite(git + "/config", "[core]\n\tbare = false\n");
  }
  static void Bare(const std::string& dir) {
    MakeDirs(dir + "/objects");
    MakeDirs(dir + "/refs");
    AtomicWrite(dir + "/HEAD", "ref: refs/heads/main\n");
  }
  // A repository's .git that would run a program on the host.
  static void Hostile(const std::string& git) {
    MakeDirs(git + "/hooks");
    AtomicWrite(git + "/config", "[core]\n\tfsmonitor = touch /nonexistent/pwned\n");
  }
  static bool IsFile(const std::string& path) {
    struct stat st;
    return ::lstat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
  }
  static int SetAsideIn(const std::string& dir) {
    int n = 0;
    for (const auto& name : ListDir(dir)) n += name.starts_with(".git.refused-");
    return n;
  }

  // Runs `body` in a child that gives the projects folder and held project `app` to nobody and
  // becomes nobody (a guard not run by root); its exit status: 0, a failed step's number, or 100
  // for an exception.
  int AsNobody(const std::string& app, const std::function<int()>& body) {
    pid_t pid = ::fork();
    if (pid < 0) return -1;
    if (pid == 0) {
      for (const auto& path : {home_.path(), ProjectsDir(), app, app + "/.git"}) {
        if (::chown(path.c_str(), 65534, 65534) != 0) ::_exit(2);
      }
      if (::setgid(65534) != 0 || ::setuid(65534) != 0) ::_exit(3);
      try {
        ::_exit(body());
      } catch (...) {
        ::_exit(100);
      }
    }
    int status = 0;
    if (::waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
    return WEXITSTATUS(status);
  }

  TempDir home_, other_;
  std::vector<std::string> said_;
};

TEST_F(FolderGuardTest, WhatReplacesAHeldProjectsGitFileIsSetAsideAndTheFilePutBack) {
  std::string app = Held("app");
  auto guard = Start();
  // A folder swapped in, as the sandbox would.
  ASSERT_EQ(::rename((app + "/.git").c_str(), (app + "/old").c_str()), 0);
  Hostile(app + "/.git");
  auto put_back = [&] {
    return IsFile(app + "/.git") && ReadFile(app + "/.git") == HeldGitFile("app");
  };
  ASSERT_TRUE(Until(*guard, [&] { return put_back() && SetAsideIn(app) == 1; }));
  // Rewritten in place.
  AtomicWrite(app + "/.git", "gitdir: /tmp/elsewhere\n");
  ASSERT_TRUE(Until(*guard, [&] { return put_back() && SetAsideIn(app) == 2; }));
  // A link in its place.
  ::unlink((app + "/.git").c_str());
  ASSERT_EQ(::symlink("/tmp", (app + "/.git").c_str()), 0);
  ASSERT_TRUE(Until(*guard, [&] { return put_back() && SetAsideIn(app) == 3; }));
  EXPECT_FALSE(said_.empty());
}

TEST_F(FolderGuardTest, AGitMadeAnywhereElseIsSetAsideHoweverDeep) {
  std::string app = Held("app");
  auto guard = Start();
  // Folders made one inside the other at once, the .git at the bottom before the guard looks.
  std::string deep = app + "/a/b/c/d/e";
  MakeDirs(deep);
  Hostile(deep + "/.git");
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(deep + "/.git"); }));
  EXPECT_EQ(SetAsideIn(deep), 1);
  // A .git file (a worktree's) made in a folder watched already.
  AtomicWrite(app + "/a/.git", "gitdir: /tmp/elsewhere\n");
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(app + "/a/.git"); }));
  // A .git in the projects folder itself: over every project without a repository.
  Hostile(ProjectsDir() + "/.git");
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(ProjectsDir() + "/.git"); }));
  // The held project's own file stays as it was.
  EXPECT_EQ(ReadFile(app + "/.git"), HeldGitFile("app"));
  EXPECT_EQ(SetAsideIn(app), 0);
}

// `depth` folders one inside the other from `top` (a path longer than any the system takes):
// the bottom one, open.
Fd Chain(const std::string& top, int depth) {
  MakeDirs(top);
  Fd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (int i = 0; i < depth && fd.ok(); ++i) {
    if (::mkdirat(fd.get(), "d", 0755) != 0) return Fd();
    fd = Fd(::openat(fd.get(), "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  }
  return fd;
}

// Cuts a chain made by Chain into pieces of at most 100 folders beside `top`, which paths
// reach (for TempDir to remove).
void Unchain(const std::string& top) {
  Fd parent(::open(Dirname(top).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd fd(::open(top.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  for (int level = 1, piece = 0; fd.ok(); ++level) {
    if (level % 100 == 0) {
      ::renameat(fd.get(), "d", parent.get(), Cat(".piece-", piece++).c_str());
      fd = Fd(::openat(parent.get(), Cat(".piece-", piece - 1).c_str(),
                       O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    } else {
      fd = Fd(::openat(fd.get(), "d", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    }
  }
}

// A repository's .git that would run a program on the host, made in folder `dir_fd`; whether
// it is still there.
void HostileAt(int dir_fd) {
  ASSERT_EQ(::mkdirat(dir_fd, ".x", 0755), 0);
  Fd git(::openat(dir_fd, ".x", O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  Fd config(::openat(git.get(), "config", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
  std::string text = "[core]\n\tfsmonitor = touch /nonexistent/pwned\n";
  ASSERT_EQ(::write(config.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
  ASSERT_EQ(::renameat(dir_fd, ".x", dir_fd, ".git"), 0);
}
bool GitAt(int dir_fd) {
  struct stat st;
  return ::fstatat(dir_fd, ".git", &st, AT_SYMLINK_NOFOLLOW) == 0;
}

TEST_F(FolderGuardTest, ATreeDeeperThanTheDescriptorsTheGuardMayHoldIsWatchedToTheBottom) {
  std::string app = Held("app");
  rlimit before{};
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &before), 0);
  rlimit low = before;
  low.rlim_cur = 256;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  // There when the guard starts, and made while it runs (walked as it is moved in).
  Fd old_bottom = Chain(app + "/old", 1000);
  auto guard = Start();
  Fd new_bottom = Chain(other_.path() + "/new", 1000);
  ASSERT_TRUE(old_bottom.ok() && new_bottom.ok());
  ASSERT_EQ(::rename((other_.path() + "/new").c_str(), (app + "/new").c_str()), 0);
  guard->Step(100);
  HostileAt(old_bottom.get());
  HostileAt(new_bottom.get());
  bool set_aside =
      Until(*guard, [&] { return !GitAt(old_bottom.get()) && !GitAt(new_bottom.get()); });
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &before), 0);
  EXPECT_TRUE(set_aside);
  for (const auto& line : said_) EXPECT_EQ(line.find("cannot watch"), std::string::npos) << line;
  guard.reset();
  Unchain(app + "/old");
  Unchain(app + "/new");
}

TEST_F(FolderGuardTest, AGitDeeperThanAnyPathIsSetAsideAndShownShort) {
  std::string app = Held("app");
  auto guard = Start();
  Fd bottom = Chain(app + "/deep", 5000);
  ASSERT_TRUE(bottom.ok());
  guard->Step(100);
  HostileAt(bottom.get());
  ASSERT_TRUE(Until(*guard, [&] { return !GitAt(bottom.get()); }));
  ASSERT_FALSE(said_.empty());
  EXPECT_NE(
      said_.back().find("/app/deep/d/d/d/d/d/d/…4986 more folders…/d/d/d/d/d/d/d/d/.git.refused-"),
      std::string::npos)
      << said_.back();
  guard.reset();
  Unchain(app + "/deep");
}

TEST_F(FolderGuardTest, FoldersMovedWithinTheTreeAreFollowed) {
  std::string app = Held("app");
  MakeDirs(app + "/from/inner");
  auto guard = Start();
  ASSERT_EQ(::rename((app + "/from").c_str(), (app + "/to").c_str()), 0);
  guard->Step(100);
  Hostile(app + "/to/inner/.git");
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(app + "/to/inner/.git"); }));
  EXPECT_EQ(SetAsideIn(app + "/to/inner"), 1);
}

TEST_F(FolderGuardTest, TheUsersRepositoriesStayUntilWhatRunsProgramsChanges) {
  std::string app = Held("app");
  std::string lib = app + "/vendor/lib";
  GitDir(lib + "/.git");
  auto guard = Start();
  // A commit's files: the repository stays.
  AtomicWrite(lib + "/.git/HEAD", "ref: refs/heads/other\n");
  AtomicWrite(lib + "/.git/index", "x");
  guard->Step(200);
  EXPECT_TRUE(PathExists(lib + "/.git/config"));
  // A hook: set aside whole.
  AtomicWrite(lib + "/.git/hooks/pre-commit", "#!/bin/sh\ntouch /nonexistent/pwned\n", 0755);
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(lib + "/.git"); }));
  EXPECT_EQ(SetAsideIn(lib), 1);
  // One that appears after the start is set aside as the sandbox's would be.
  std::string two = app + "/two";
  MakeDirs(two + "/.git");
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(two + "/.git"); }));
}

TEST_F(FolderGuardTest, AFolderGitTakesForARepositoryWithoutADotGitLosesItsHead) {
  std::string app = Held("app");
  auto guard = Start();
  // A bare repository made in a subfolder (git finds it from there and below, and obeys its
  // config), and one in the projects folder itself.
  for (const std::string& dir : {app + "/sub", ProjectsDir()}) {
    MakeDirs(dir + "/objects");
    MakeDirs(dir + "/refs");
    AtomicWrite(dir + "/config", "[core]\n\tpager = touch /nonexistent/pwned\n");
    AtomicWrite(dir + "/HEAD", "ref: refs/heads/main\n");
    ASSERT_TRUE(Until(*guard, [&] { return !PathExists(dir + "/HEAD"); })) << dir;
  }
  // Its objects and refs made last, or as links (git follows them).
  std::string last = app + "/last";
  MakeDirs(last);
  AtomicWrite(last + "/config", "[core]\n\tpager = touch /nonexistent/pwned\n");
  AtomicWrite(last + "/HEAD", "ref: refs/heads/main\n");
  guard->Step(50);
  MakeDirs(last + "/objects");
  MakeDirs(last + "/refs");
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(last + "/HEAD"); }));
  std::string linked = app + "/linked";
  MakeDirs(linked);
  AtomicWrite(linked + "/HEAD", "ref: refs/heads/main\n");
  ASSERT_EQ(::symlink(".", (linked + "/objects").c_str()), 0);
  ASSERT_EQ(::symlink(".", (linked + "/refs").c_str()), 0);
  AtomicWrite(linked + "/config", "[core]\n\tpager = touch /nonexistent/pwned\n");
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(linked + "/HEAD"); }));
  // Made elsewhere whole, then moved in.
  MakeDirs(other_.path() + "/bare/objects");
  MakeDirs(other_.path() + "/bare/refs");
  AtomicWrite(other_.path() + "/bare/HEAD", "ref: refs/heads/main\n");
  ASSERT_EQ(::rename((other_.path() + "/bare").c_str(), (app + "/moved").c_str()), 0);
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(app + "/moved/HEAD"); }));
}

TEST_F(FolderGuardTest, TheUsersRepositoryMovedAwayAndBackIsNoLongerTrusted) {
  std::string app = Held("app");
  std::string lib = app + "/lib";
  MakeDirs(lib + "/.git/objects");
  MakeDirs(lib + "/.git/refs");
  AtomicWrite(lib + "/.git/HEAD", "ref: refs/heads/main\n");
  auto guard = Start();
  // Renamed, its settings changed while it has another name, renamed back: at once, as the
  // sandbox would.
  ASSERT_EQ(::rename((lib + "/.git").c_str(), (lib + "/t").c_str()), 0);
  AtomicWrite(lib + "/t/config", "[core]\n\tfsmonitor = touch /nonexistent/pwned\n");
  ASSERT_EQ(::rename((lib + "/t").c_str(), (lib + "/.git").c_str()), 0);
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(lib + "/.git"); }));
}

TEST_F(FolderGuardTest, TheUsersGitFileWrittenThroughADescriptorKeptOpenIsSeenAtOnce) {
  std::string app = Held("app");
  std::string wt = app + "/wt";
  MakeDirs(wt);
  AtomicWrite(wt + "/.git", "gitdir: /somewhere/worktrees/wt\n");
  auto guard = Start();
  Fd fd(::open((wt + "/.git").c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  ASSERT_TRUE(fd.ok());
  ASSERT_EQ(::write(fd.get(), "gitdir: e\n", 10), 10);
  // Still open: the guard must not wait for it to be closed.
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(wt + "/.git"); }));
}

TEST_F(FolderGuardTest, AFoldersOwnRepositoryStaysAndANewOneThereIsSetAside) {
  // The first folder shared with its repository (ss . --no-copy), the second without one.
  MakeDirs(other_.path() + "/.git");
  auto guard = Start(true);
  AtomicWrite(other_.path() + "/.git/config", "[core]\n\tbare = false\n");
  guard->Step(200);
  EXPECT_TRUE(PathExists(other_.path() + "/.git/config"));
  Hostile(other_.path() + "/src/.git");
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(other_.path() + "/src/.git"); }));
}

TEST_F(FolderGuardTest, ARepositoryAppearingInAProjectWithoutOneIsSetAsideWithHowToKeepIt) {
  MakeDirs(ProjectsDir() + "/mine/.git");  // the user's, there before: the session holds it
  auto guard = Start();
  MakeDirs(ProjectsDir() + "/fresh");
  guard->Step(100);
  Hostile(ProjectsDir() + "/fresh/.git");
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(ProjectsDir() + "/fresh/.git"); }));
  EXPECT_TRUE(PathExists(ProjectsDir() + "/mine/.git"));
  bool hint = false;
  for (const auto& line : said_) hint = hint || line.find("give it to ss") != std::string::npos;
  EXPECT_TRUE(hint);
}

// Writes `text` over the file at `path` in place (the same inode), as through a hard link.
void WriteInPlace(const std::string& path, const std::string& text) {
  Fd fd(::open(path.c_str(), O_WRONLY | O_TRUNC | O_CLOEXEC));
  ASSERT_TRUE(fd.ok()) << path;
  ASSERT_EQ(::write(fd.get(), text.data(), text.size()), static_cast<ssize_t>(text.size()));
}

TEST_F(FolderGuardTest, AGuardStartedAgainTrustsOnlyWhatTheFirstFoundUnchanged) {
  std::string app = Held("app");
  std::string lib = app + "/lib";
  GitDir(lib + "/.git");
  std::string origin = app + "/origin.git";
  Bare(origin);
  std::string wt = app + "/wt";
  MakeDirs(wt);
  AtomicWrite(wt + "/.git", "gitdir: ../lib/.git/worktrees/wt\n");
  std::string changed = app + "/changed";
  GitDir(changed + "/.git");
  std::set<std::string> known = Start()->Known();
  EXPECT_EQ(known.size(), 5u);  // the four repositories, and when the first run began
  // While no guard ran: a repository made, one of the user's changed, a .git file led
  // elsewhere, a folder made a repository without a .git.
  Hostile(app + "/evil/.git");
  WriteInPlace(changed + "/.git/config", "[core]\n\tfsmonitor = touch /nonexistent/pwned\n");
  WriteInPlace(wt + "/.git", "gitdir: /tmp/elsewhere\n");
  std::string bare = app + "/bare";
  Bare(bare);
  auto again = Start(false, known);
  ASSERT_TRUE(Until(*again, [&] {
    return !PathExists(app + "/evil/.git") && !PathExists(changed + "/.git") &&
           !PathExists(wt + "/.git") && !PathExists(bare + "/HEAD");
  }));
  EXPECT_TRUE(PathExists(lib + "/.git/config"));
  EXPECT_TRUE(PathExists(origin + "/HEAD"));
  EXPECT_EQ(ReadFile(app + "/.git"), HeldGitFile("app"));
  EXPECT_EQ(said_.size(), 4u);
}

TEST_F(FolderGuardTest, AHeldGitFileWrittenThroughAHardLinkIsPutBack) {
  std::string app = Held("app");
  MakeDirs(app + "/sub");
  auto guard = Start();
  ASSERT_EQ(::link((app + "/.git").c_str(), (app + "/sub/x").c_str()), 0);
  guard->Step(50);
  WriteInPlace(app + "/sub/x", "gitdir: /tmp/elsewhere\n");
  ASSERT_TRUE(Until(*guard, [&] {
    return IsFile(app + "/.git") && ReadFile(app + "/.git") == HeldGitFile("app");
  }));
  EXPECT_EQ(SetAsideIn(app), 1);
  // The file put back is watched in turn.
  ASSERT_EQ(::link((app + "/.git").c_str(), (app + "/sub/y").c_str()), 0);
  guard->Step(50);
  WriteInPlace(app + "/sub/y", "gitdir: /tmp/elsewhere\n");
  ASSERT_TRUE(Until(*guard, [&] { return SetAsideIn(app) == 2; }));
  EXPECT_EQ(ReadFile(app + "/.git"), HeldGitFile("app"));
  // Removed, and put back by a session: the new file is watched.
  ASSERT_EQ(::unlink((app + "/.git").c_str()), 0);
  guard->Step(50);
  HoldRepository(app, "app", false);
  guard->Step(50);
  ASSERT_EQ(::link((app + "/.git").c_str(), (app + "/sub/z").c_str()), 0);
  guard->Step(50);
  WriteInPlace(app + "/sub/z", "gitdir: /tmp/elsewhere\n");
  ASSERT_TRUE(Until(*guard, [&] { return SetAsideIn(app) == 3; }));
  EXPECT_EQ(ReadFile(app + "/.git"), HeldGitFile("app"));
}

TEST_F(FolderGuardTest, TheUsersSettingsAndHooksWrittenThroughAHardLinkAreSeen) {
  std::string app = Held("app");
  for (const char* file : {"config", "hooks/pre-commit"}) {
    std::string lib = app + "/lib";
    GitDir(lib + "/.git");
    AtomicWrite(lib + "/.git/hooks/pre-commit", "#!/bin/sh\n", 0755);
    std::string link = app + "/elsewhere";
    ::unlink(link.c_str());
    ASSERT_EQ(::link((lib + "/.git/" + file).c_str(), link.c_str()), 0);
    auto guard = Start();
    WriteInPlace(link, "[core]\n\tfsmonitor = touch /nonexistent/pwned\n");
    ASSERT_TRUE(Until(*guard, [&] { return !PathExists(lib + "/.git"); })) << file;
    RemoveTree(lib);
  }
}

TEST_F(FolderGuardTest, TheUsersSubmodulesAndWorktreesAreGuardedAsTheRepositoryIs) {
  std::string app = Held("app");
  std::string lib = app + "/lib";
  // What `git submodule` and `git worktree` leave in a .git: a folder per submodule (named by
  // its path) and per linked worktree, each a repository's folder.
  auto make = [&] {
    MakeDirs(lib + "/.git/modules/deps/one/hooks");
    AtomicWrite(lib + "/.git/HEAD", "ref: refs/heads/main\n");
    AtomicWrite(lib + "/.git/modules/deps/one/HEAD", "ref: refs/heads/main\n");
    AtomicWrite(lib + "/.git/modules/deps/one/config", "[core]\n\tbare = false\n");
    MakeDirs(lib + "/.git/worktrees/wt");
    AtomicWrite(lib + "/.git/worktrees/wt/HEAD", "ref: refs/heads/wt\n");
    AtomicWrite(lib + "/.git/worktrees/wt/commondir", "../..\n");
    MakeDirs(lib + "/deps/one");
    AtomicWrite(lib + "/deps/one/.git", "gitdir: ../../.git/modules/deps/one\n");
  };
  std::vector<std::function<void()>> attacks = {
      [&] { AtomicWrite(lib + "/.git/modules/deps/one/config", "[core]\n\tpager = x\n"); },
      [&] { WriteInPlace(lib + "/.git/modules/deps/one/config", "[core]\n\tpager = x\n"); },
      [&] { AtomicWrite(lib + "/.git/modules/deps/one/hooks/post-checkout", "x", 0755); },
      [&] { WriteInPlace(lib + "/.git/worktrees/wt/commondir", "/tmp/evil\n"); },
      [&] { AtomicWrite(lib + "/.git/worktrees/wt/config.worktree", "[core]\n\tpager = x\n"); },
      [&] { MakeDirs(lib + "/.git/modules/two"); },
  };
  for (size_t i = 0; i < attacks.size(); ++i) {
    make();
    auto guard = Start();
    // A commit in the submodule changes none of that.
    AtomicWrite(lib + "/.git/modules/deps/one/HEAD", "ref: refs/heads/other\n");
    AtomicWrite(lib + "/.git/modules/deps/one/index", "x");
    guard->Step(100);
    ASSERT_TRUE(PathExists(lib + "/.git/HEAD")) << i;
    attacks[i]();
    ASSERT_TRUE(Until(*guard, [&] { return !PathExists(lib + "/.git"); })) << i;
    RemoveTree(lib);
  }
}

TEST_F(FolderGuardTest, TheUsersRepositoryChangedAndMovedAtOnceIsSetAsideWhereItWent) {
  std::string app = Held("app");
  std::string lib = app + "/lib";
  GitDir(lib + "/.git");
  auto guard = Start();
  // Both before the guard reads what happened: the change is seen where the folder went.
  WriteInPlace(lib + "/.git/config", "[core]\n\tfsmonitor = touch /nonexistent/pwned\n");
  ASSERT_EQ(::rename(lib.c_str(), (app + "/lib2").c_str()), 0);
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(app + "/lib2/.git"); }));
  EXPECT_EQ(SetAsideIn(app + "/lib2"), 1);
  // And so when the folder is moved out and back.
  std::string two = app + "/two";
  MakeDirs(two + "/.git");
  AtomicWrite(two + "/.git/HEAD", "ref: refs/heads/main\n");
  AtomicWrite(two + "/.git/config", "[core]\n\tbare = false\n");
  guard.reset();
  guard = Start();
  ASSERT_EQ(::rename(two.c_str(), (other_.path() + "/two").c_str()), 0);
  guard->Step(50);
  WriteInPlace(other_.path() + "/two/.git/config", "[core]\n\tpager = touch /nonexistent/p\n");
  guard->Step(50);
  ASSERT_EQ(::rename((other_.path() + "/two").c_str(), two.c_str()), 0);
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(two + "/.git"); }));
}

TEST_F(FolderGuardTest, TheUsersGitFileMovedAwayAndBackIsNoLongerTrusted) {
  std::string app = Held("app");
  std::string wt = app + "/wt";
  MakeDirs(wt);
  AtomicWrite(wt + "/.git", "gitdir: ../.git/worktrees/wt\n");
  auto guard = Start();
  ASSERT_EQ(::rename((wt + "/.git").c_str(), (wt + "/t").c_str()), 0);
  WriteInPlace(wt + "/t", "gitdir: /tmp/evil\n");  // the same file, under another name
  ASSERT_EQ(::rename((wt + "/t").c_str(), (wt + "/.git").c_str()), 0);
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(wt + "/.git"); }));
}

TEST_F(FolderGuardTest, TheUsersBareRepositoryStaysUntilItsSettingsChange) {
  std::string app = Held("app");
  std::string bare = app + "/origin.git";
  MakeDirs(bare + "/objects");
  MakeDirs(bare + "/refs/heads");
  MakeDirs(bare + "/hooks");
  AtomicWrite(bare + "/HEAD", "ref: refs/heads/main\n");
  AtomicWrite(bare + "/config", "[core]\n\tbare = true\n");
  auto guard = Start();
  // A push: objects and refs.
  MakeDirs(bare + "/objects/ab");
  AtomicWrite(bare + "/objects/ab/cdef", "x");
  AtomicWrite(bare + "/refs/heads/main", "0123\n");
  guard->Step(100);
  EXPECT_TRUE(PathExists(bare + "/HEAD"));
  // A hook: no longer a repository (its HEAD set aside), and what is in it watched as any folder.
  AtomicWrite(bare + "/hooks/post-receive", "#!/bin/sh\n", 0755);
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(bare + "/HEAD"); }));
  Hostile(bare + "/hooks/.git");
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(bare + "/hooks/.git"); }));
}

TEST_F(FolderGuardTest, ARepositoryMadeOfPartsThatArriveLateIsSeen) {
  std::string app = Held("app");
  auto guard = Start();
  auto settings = [](const std::string& dir) {
    AtomicWrite(dir + "/config", "[core]\n\tfsmonitor = touch /nonexistent/pwned\n");
    AtomicWrite(dir + "/HEAD", "ref: refs/heads/main\n");
  };
  // refs a folder of the tree renamed so.
  MakeDirs(app + "/r1/objects");
  MakeDirs(app + "/r1/x");
  settings(app + "/r1");
  guard->Step(50);
  ASSERT_EQ(::rename((app + "/r1/x").c_str(), (app + "/r1/refs").c_str()), 0);
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(app + "/r1/HEAD"); }));
  // objects and refs links that lead nowhere yet.
  MakeDirs(app + "/r2");
  settings(app + "/r2");
  ASSERT_EQ(::symlink("../r2o", (app + "/r2/objects").c_str()), 0);
  ASSERT_EQ(::symlink("../r2r", (app + "/r2/refs").c_str()), 0);
  ASSERT_TRUE(Until(*guard, [&] { return !PathExists(app + "/r2/HEAD"); }));
}

TEST_F(FolderGuardTest, WhatChangedWhileTheSystemDroppedEventsIsSeen) {
  std::string app = Held("app");
  std::string lib = app + "/lib";
  GitDir(lib + "/.git");
  std::string bare = app + "/origin.git";
  Bare(bare);
  MakeDirs(bare + "/hooks");
  MakeDirs(app + "/flood");
  auto guard = Start();
  // More events than the system keeps for a reader (two names in turn: the same event twice in a
  // row would count once), then the changes.
  int most = std::stoi(ReadFile("/proc/sys/fs/inotify/max_queued_events"));
  for (int i = 0; i < most + 1000; ++i) {
    Fd fd(::open((app + "/flood/" + (i % 2 ? "a" : "b")).c_str(), O_WRONLY | O_CREAT | O_CLOEXEC,
                 0644));
  }
  WriteInPlace(lib + "/.git/config", "[core]\n\tfsmonitor = touch /nonexistent/pwned\n");
  AtomicWrite(bare + "/hooks/post-update", "#!/bin/sh\n", 0755);
  ASSERT_TRUE(
      Until(*guard, [&] { return !PathExists(lib + "/.git") && !PathExists(bare + "/HEAD"); }));
}

// As the user (a guard not run by root): a folder it cannot read is made readable, or looked at
// once it can be, and one it may only search is looked in all the same. In a child that drops root;
// its exit status says which step failed.
TEST_F(FolderGuardTest, AFolderTheGuardCannotReadIsLookedInAllTheSame) {
  std::string app = Held("app");
  auto steps = [&] {
    auto guard = Start();
    // Folder `name` made with mode `made`, then (unless `later` is 0) changed to `later`, each
    // seen by the guard; a .git made in it is set aside. Failed steps: first, +1, +2.
    auto check = [&](const std::string& name, mode_t made, mode_t later, int first) {
      std::string dir = app + "/" + name;
      if (::mkdir(dir.c_str(), made) != 0) return first;
      guard->Step(50);
      if (later != 0) {
        if (::chmod(dir.c_str(), later) != 0) return first + 1;
        guard->Step(50);
      }
      Hostile(dir + "/.git");
      return Until(*guard, [&] { return !PathExists(dir + "/.git"); }) ? 0 : first + 2;
    };
    // Made unreadable, then readable; made so it can be written and searched, never read (all
    // git needs): made readable; watched, then made unreadable.
    int failed = check("a1", 0, 0755, 4);
    if (failed == 0) failed = check("b1", 0300, 0, 8);
    if (failed == 0) failed = check("c1", 0755, 0311, 11);
    return failed;
  };
  EXPECT_EQ(AsNobody(app, steps), 0);
}

// The sandbox of a container engine is the same user on the host: it can take every watch the
// user has. The guard then walks the folders now and then, and still sets aside what appears
// and puts a project's .git file back. In a child that drops root (the limit is per user).
TEST_F(FolderGuardTest, WithTheWatchesUsedUpTheFoldersAreWalkedNowAndThen) {
  std::string app = Held("app");
  std::string pool = home_.path() + "/pool";
  auto steps = [&] {
    std::vector<std::string> dirs;
    for (int i = 0; i < 2000; ++i) {
      dirs.push_back(Cat(pool, "/", i));
      MakeDirs(dirs.back());
    }
    std::vector<Fd> hogs;
    bool full = false;
    for (int i = 0; i < 120 && !full; ++i) {
      hogs.emplace_back(platform::OpenFolderWatch());
      if (!hogs.back().ok()) return 4;
      for (const auto& d : dirs) {
        Fd dir(::open(d.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
        if (platform::AddFolderWatch(hogs.back().get(), dir.get()) < 0) {
          if (errno != ENOSPC) return 5;
          full = true;
          break;
        }
      }
    }
    if (!full) return 6;
    auto guard = Start();
    bool said = false;
    for (const auto& line : said_) said = said || line.starts_with("cannot watch more folders");
    if (!said) return 7;
    WriteInPlace(app + "/.git", "gitdir: /tmp/elsewhere\n");
    Hostile(app + "/sub/.git");
    auto done = [&] {
      return !PathExists(app + "/sub/.git") && ReadFile(app + "/.git") == HeldGitFile("app");
    };
    auto end = std::chrono::steady_clock::now() + std::chrono::seconds(15);
    while (!done() && std::chrono::steady_clock::now() < end) guard->Step(500);
    if (!done()) return 8;
    return 0;
  };
  EXPECT_EQ(AsNobody(app, steps), 0);
}

// Mercurial and Jujutsu obey their repository's settings as git does (hooks, aliases, tools),
// and a prompt may run them in every folder it enters.
TEST_F(FolderGuardTest, MercurialAndJujutsuRepositoriesAreGuardedAsGitsAre) {
  std::string app = Held("app");
  auto aside = [](const std::string& folder, const std::string& name) {
    for (const auto& entry : ListDir(folder)) {
      if (entry.starts_with(name + ".refused-")) return true;
    }
    return false;
  };
  // The user's, there when the guard starts.
  std::string hg = app + "/hg", jj = app + "/jj", linked = app + "/linked";
  MakeDirs(hg + "/.hg/store");
  AtomicWrite(hg + "/.hg/hgrc", "[ui]\nusername = me\n");
  AtomicWrite(hg + "/.hg/requires", "store\n");
  MakeDirs(jj + "/.jj/repo/store");
  MakeDirs(linked + "/.hg");
  AtomicWrite(linked + "/.hg/hgrc", "[ui]\n");
  MakeDirs(other_.path() + "/keep");
  auto guard = Start();
  std::set<std::string> known = guard->Known();
  // Their daily work stays: the store, the dirstate.
  AtomicWrite(hg + "/.hg/dirstate", "x");
  AtomicWrite(hg + "/.hg/store/00changelog.i", "x");
  AtomicWrite(jj + "/.jj/repo/store/x", "x");
  guard->Step(200);
  EXPECT_TRUE(PathExists(hg + "/.hg/hgrc"));
  EXPECT_TRUE(PathExists(jj + "/.jj/repo"));
  // Made after the start, anywhere, as a folder, a file or a link: set aside.
  MakeDirs(app + "/a/b/.hg");
  AtomicWrite(app + "/a/b/.hg/hgrc", "[hooks]\npre-status = touch /nonexistent/pwned\n");
  MakeDirs(app + "/c/.jj/repo");
  ASSERT_EQ(::symlink((hg + "/.hg").c_str(), (app + "/d.hg").c_str()), 0);
  MakeDirs(app + "/d");
  ASSERT_EQ(::rename((app + "/d.hg").c_str(), (app + "/d/.hg").c_str()), 0);
  // Moved in whole, from a folder made elsewhere.
  MakeDirs(app + "/tmp/e/.hg");
  MakeDirs(app + "/tmp/e/sub/.jj");
  ASSERT_EQ(::rename((app + "/tmp/e").c_str(), (app + "/e").c_str()), 0);
  EXPECT_TRUE(Until(*guard, [&] {
    return aside(app + "/a/b", ".hg") && aside(app + "/c", ".jj") && aside(app + "/d", ".hg") &&
           aside(app + "/e", ".hg") && aside(app + "/e/sub", ".jj");
  })) << Join(said_, "\n");
  // The user's whose settings change: in place, replaced, through a hard link, or a .jj's
  // repository config: set aside whole.
  WriteInPlace(hg + "/.hg/hgrc", "[hooks]\npre-status = touch /nonexistent/pwned\n");
  AtomicWrite(jj + "/.jj/repo/config.toml", "[aliases]\n");
  ASSERT_EQ(::link((linked + "/.hg/hgrc").c_str(), (app + "/elsewhere").c_str()), 0);
  EXPECT_TRUE(Until(*guard, [&] {
    return aside(hg, ".hg") && aside(jj, ".jj") && aside(linked, ".hg");
  })) << Join(said_, "\n");
  size_t appeared = 0, changed = 0;
  for (const auto& line : said_) {
    appeared +=
        line.find(" that appeared in a shared folder while the sandbox ran: ") != std::string::npos;
    changed += line.find(" whose settings changed while the sandbox ran: ") != std::string::npos;
  }
  EXPECT_EQ(appeared, 5u) << Join(said_, "\n");
  EXPECT_EQ(changed, 3u) << Join(said_, "\n");
  EXPECT_EQ(said_.size(), 8u) << Join(said_, "\n");
  EXPECT_TRUE(said_[0].starts_with("set aside a Mercurial repository (.hg) ") ||
              said_[0].starts_with("set aside a Jujutsu repository (.jj) "))
      << said_[0];
  // A guard started again knows only what the first found, unchanged.
  guard.reset();
  said_.clear();
  std::string kept = app + "/kept";
  MakeDirs(kept + "/.hg");
  auto again = Start(false, known);
  EXPECT_TRUE(aside(kept, ".hg"));
  ASSERT_EQ(said_.size(), 1u) << Join(said_, "\n");
  EXPECT_TRUE(
      said_[0].starts_with("set aside a Mercurial repository (.hg) that appeared or "
                           "changed in a shared folder while the sandbox ran unwatched: "))
      << said_[0];
}

// A file of a shared folder is the user's on the host: made setuid, it would run as the user for
// anyone who can reach it.
TEST_F(FolderGuardTest, AFileMadeSetuidOrSetgidLosesThoseBits) {
  std::string app = Held("app");
  AtomicWrite(app + "/mine", "x");
  ASSERT_EQ(::chmod((app + "/mine").c_str(), 04755), 0);
  auto guard = Start();
  AtomicWrite(app + "/a", "x");
  ASSERT_EQ(::chmod((app + "/a").c_str(), 04755), 0);
  AtomicWrite(app + "/b", "x");
  ASSERT_EQ(::chmod((app + "/b").c_str(), 02711), 0);
  // Made so at once; in a folder made just before (no event of its own reaches the guard); moved
  // in from elsewhere.
  Fd made(::open((app + "/c").c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 06755));
  ASSERT_TRUE(made.ok());
  made = Fd();
  MakeDirs(app + "/new/deep");
  AtomicWrite(app + "/new/deep/d", "x");
  ASSERT_EQ(::chmod((app + "/new/deep/d").c_str(), 04700), 0);
  AtomicWrite(other_.path() + "/e", "x");
  ASSERT_EQ(::chmod((other_.path() + "/e").c_str(), 04755), 0);
  ASSERT_EQ(::rename((other_.path() + "/e").c_str(), (app + "/e").c_str()), 0);
  EXPECT_TRUE(Until(*guard, [&] {
    return Mode(app + "/a") == 0755 && Mode(app + "/b") == 0711 && Mode(app + "/c") == 0755 &&
           Mode(app + "/new/deep/d") == 0700 && Mode(app + "/e") == 0755;
  })) << Join(said_, "\n");
  // The user's own, there when the sandbox started, is the user's business.
  EXPECT_EQ(Mode(app + "/mine"), 04755u);
  ASSERT_EQ(said_.size(), 5u) << Join(said_, "\n");
  for (const auto& line : said_) {
    EXPECT_TRUE(
        line.starts_with("took the setuid and setgid bits off a file the sandbox gave "
                         "them (on the host it would run as you for anyone who can "
                         "reach it): "))
        << line;
  }
}

TEST_F(FolderGuardTest, AGuardStartedAgainTakesTheBitsOffWhatWasMadeSetuidWhileNoneWatched) {
  std::string app = Held("app");
  AtomicWrite(app + "/mine", "x");
  ASSERT_EQ(::chmod((app + "/mine").c_str(), 04755), 0);
  std::set<std::string> known = Start()->Known();
  // (Files' times may be taken from a clock that moves a tick at a time.)
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  // While no guard ran: a file made setuid, one made setgid in a new folder.
  AtomicWrite(app + "/a", "x");
  ASSERT_EQ(::chmod((app + "/a").c_str(), 04755), 0);
  MakeDirs(app + "/new");
  AtomicWrite(app + "/new/b", "x");
  ASSERT_EQ(::chmod((app + "/new/b").c_str(), 02711), 0);
  auto again = Start(false, known);
  EXPECT_EQ(Mode(app + "/a"), 0755u);
  EXPECT_EQ(Mode(app + "/new/b"), 0711u);
  // The user's, there when the first run began, stays theirs.
  EXPECT_EQ(Mode(app + "/mine"), 04755u);
  ASSERT_EQ(said_.size(), 2u) << Join(said_, "\n");
  // A guard that starts with the sandbox takes what it finds for the user's.
  said_.clear();
  ASSERT_EQ(::chmod((app + "/a").c_str(), 04755), 0);
  auto fresh = Start();
  EXPECT_EQ(Mode(app + "/a"), 04755u);
  EXPECT_TRUE(said_.empty()) << Join(said_, "\n");
}

// A file given capabilities runs with them whoever runs it, as a setuid one runs as its owner; a
// device file opens the device for anyone who can reach it. Making either takes root inside a
// sandbox whose root is root on the host (as root here).
TEST_F(FolderGuardTest, AFileGivenCapabilitiesLosesThemAndADeviceFileIsSetAside) {
  if (::geteuid() != 0) GTEST_SKIP() << "capabilities and device files are made by root";
  // cap_net_raw (13), permitted and effective, for any user who runs the file: the kernel's
  // second revision of the value, little-endian (magic 0x02000000 | effective; permitted and
  // inheritable, twice).
  auto give = [](const std::string& path) {
    const unsigned char caps[20] = {0x01, 0, 0, 0x02, 0x00, 0x20, 0, 0};
    return ::setxattr(path.c_str(), "security.capability", caps, sizeof caps, 0);
  };
  // Device numbers of a device there is (they are never opened here).
  struct stat null_device;
  ASSERT_EQ(::stat("/dev/null", &null_device), 0);
  auto capable = [](const std::string& path) {
    return ::getxattr(path.c_str(), "security.capability", nullptr, 0) >= 0;
  };
  auto aside = [](const std::string& folder, const std::string& name) {
    for (const auto& [entry, type] : ReadDirAt(Fd(::open(folder.c_str(), O_RDONLY)).get())) {
      if (entry.starts_with(name + ".refused-")) return type == DT_CHR || type == DT_BLK;
    }
    return false;
  };
  std::string app = Held("app");
  AtomicWrite(app + "/mine", "x");
  if (give(app + "/mine") != 0)
    GTEST_SKIP() << "no file capabilities here: " << std::strerror(errno);
  auto guard = Start();
  AtomicWrite(app + "/a", "x");
  ASSERT_EQ(give(app + "/a"), 0);
  ASSERT_EQ(::mknod((app + "/tty").c_str(), S_IFCHR | 0666, null_device.st_rdev), 0);
  // In a folder made just before: no event of their own reaches the guard.
  MakeDirs(app + "/new");
  ASSERT_EQ(::mknod((app + "/new/disk").c_str(), S_IFBLK | 0666, null_device.st_rdev), 0);
  AtomicWrite(app + "/new/b", "x");
  ASSERT_EQ(give(app + "/new/b"), 0);
  EXPECT_TRUE(Until(*guard, [&] {
    return !capable(app + "/a") && !capable(app + "/new/b") && aside(app, "tty") &&
           aside(app + "/new", "disk");
  })) << Join(said_, "\n");
  // The user's own, there when the sandbox started, is the user's business; what the guard set
  // aside stays where it put it.
  guard->Step(200);
  EXPECT_TRUE(capable(app + "/mine"));
  ASSERT_EQ(said_.size(), 4u) << Join(said_, "\n");
  int took = 0, set_aside = 0;
  for (const auto& line : said_) {
    took += line.starts_with(
        "took the file capabilities off a file the sandbox gave them (on the host it would run "
        "with them for anyone who can reach it): ");
    set_aside += line.starts_with(
        "set aside a device file the sandbox made (on the host it opens the device for anyone "
        "who can reach it): ");
  }
  EXPECT_EQ(took, 2) << Join(said_, "\n");
  EXPECT_EQ(set_aside, 2) << Join(said_, "\n");
}

TEST_F(FolderGuardTest, AFifoNamedAsAFileTheHostsToolsOpenIsSetAside) {
  std::string dir = ProjectsDir() + "/p";
  MakeDirs(dir + "/sub/.vscode");
  MakeDirs(dir + "/early");
  // One there before the guard starts (left by a sandbox that ran unwatched).
  ASSERT_EQ(::mkfifo((dir + "/early/.envrc").c_str(), 0644), 0);
  auto guard = Start();
  auto aside = [](const std::string& folder, const std::string& name) {
    for (const auto& [entry, type] : ReadDirAt(Fd(::open(folder.c_str(), O_RDONLY)).get())) {
      if (entry.starts_with(name + ".refused-")) return type == DT_FIFO;
    }
    return false;
  };
  EXPECT_TRUE(aside(dir + "/early", ".envrc"));
  for (const char* path :
       {"/sub/.gitignore", "/.gitattributes", "/sub/.vscode/settings.json", "/sub/data.pipe"}) {
    ASSERT_EQ(::mkfifo((dir + path).c_str(), 0644), 0) << path;
  }
  // One made elsewhere and moved into place.
  ASSERT_EQ(::mkfifo((dir + "/sub/x").c_str(), 0644), 0);
  ASSERT_EQ(::rename((dir + "/sub/x").c_str(), (dir + "/sub/.gitmodules").c_str()), 0);
  EXPECT_TRUE(Until(*guard, [&] {
    return aside(dir + "/sub", ".gitignore") && aside(dir, ".gitattributes") &&
           aside(dir + "/sub/.vscode", "settings.json") && aside(dir + "/sub", ".gitmodules");
  }));
  // A fifo of any other name is the sandbox's business; a plain .gitignore is a file.
  AtomicWrite(dir + "/.gitignore", "build/\n");
  guard->Step(100);
  struct stat st;
  EXPECT_EQ(::lstat((dir + "/sub/data.pipe").c_str(), &st), 0);
  EXPECT_TRUE(S_ISFIFO(st.st_mode));
  EXPECT_EQ(ReadFile(dir + "/.gitignore"), "build/\n");
  ASSERT_EQ(said_.size(), 5u) << Join(said_, "\n");
  for (const auto& line : said_) {
    EXPECT_TRUE(
        line.starts_with("set aside a fifo named as a file the host's tools open on "
                         "their own (they would wait on it for ever): "))
        << line;
  }
}

TEST_F(FolderGuardTest, TheGuardEndsWhenItsFoldersAreGone) {
  auto guard = Start();
  EXPECT_GT(guard->watched(), 0);
  RemoveTree(ProjectsDir());
  EXPECT_TRUE(Until(*guard, [&] { return guard->watched() == 0; }));
  EXPECT_FALSE(guard->Step(10));
}

}  // namespace
}  // namespace ss
