// The guard of a running sandbox's shared folders, with the real kernel's notices: whatever is
// put in place of a held project's .git file is set aside and the file put back; a .git that
// appears anywhere else, however deep and however it got there, is set aside; the user's
// repositories found at the start stay, until something that runs programs changes in them.
#include "folder_guard.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <functional>

#include "fd.hpp"
#include "fs.hpp"
#include "gtest/gtest.h"
#include "held_repository.hpp"
#include "paths.hpp"
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

  std::unique_ptr<FolderGuard> Start(bool with_other = false) {
    std::vector<GuardedFolder> folders = {{ProjectsDir(), true}};
    if (with_other) folders.push_back({other_.path(), false});
    return std::make_unique<FolderGuard>(folders,
                                         [this](const std::string& l) { said_.push_back(l); });
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
  MakeDirs(lib + "/.git/hooks");
  AtomicWrite(lib + "/.git/config", "[core]\n\tbare = false\n");
  AtomicWrite(lib + "/.git/HEAD", "ref: refs/heads/main\n");
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

TEST_F(FolderGuardTest, TheGuardEndsWhenItsFoldersAreGone) {
  auto guard = Start();
  EXPECT_GT(guard->watched(), 0);
  RemoveTree(ProjectsDir());
  EXPECT_TRUE(Until(*guard, [&] { return guard->watched() == 0; }));
  EXPECT_FALSE(guard->Step(10));
}

}  // namespace
}  // namespace ss
