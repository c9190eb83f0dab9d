// A shared project's repository held out of the share: moved out whole when ss can trust it,
// taken in as branches only when it may be the sandbox's, its .git file put back over whatever
// the sandbox left in its place, and the held repository named by the project, never by what
// the .git file says. With the real git.
#include "held_repository.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include "error.hpp"
#include "fs.hpp"
#include "gtest/gtest.h"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "strings.hpp"

namespace ss {
namespace {

class HeldRepositoryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("SS_HOME", home_.path().c_str(), 1);
    MakeDirs(ProjectsDir());
    dir_ = ProjectsDir() + "/app";
    MakeDirs(dir_);
  }
  void TearDown() override { ::unsetenv("SS_HOME"); }

  std::string Git(std::vector<std::string> args) {
    args.insert(args.begin(), {"git", "-c", "user.name=t", "-c", "user.email=t@t"});
    ProcessResult r = ss::Run(args);
    EXPECT_TRUE(r.ok()) << Join(args, " ") << ": " << r.err;
    return std::string(Trim(r.out));
  }
  // A repository of one commit in `dir`, with a setting that would run a program.
  void MakeRepository(const std::string& dir) {
    Git({"init", "-q", "--initial-branch=main", dir});
    AtomicWrite(dir + "/a.txt", "a\n");
    Git({"-C", dir, "add", "a.txt"});
    Git({"-C", dir, "commit", "-q", "-m", "first"});
    Git({"-C", dir, "config", "core.fsmonitor", "touch /nonexistent/pwned; false"});
    Git({"-C", dir, "remote", "add", "origin", "https://example.com/app.git"});
  }
  std::string Held() { return HeldRepositoryDir("app"); }

  TempDir home_;
  std::string dir_;
};

TEST_F(HeldRepositoryTest, NoRepositoryIsLeftAlone) {
  Holding h = HoldRepository(dir_, "app", true);
  EXPECT_EQ(h.state, Holding::State::kNone);
  EXPECT_TRUE(h.said.empty());
  EXPECT_FALSE(PathExists(dir_ + "/.git"));
  EXPECT_FALSE(HeldGitDirOf(dir_));
}

TEST_F(HeldRepositoryTest, ATrustedRepositoryMovesOutWhole) {
  MakeRepository(dir_);
  Holding h = HoldRepository(dir_, "app", true);
  EXPECT_EQ(h.state, Holding::State::kHeld);
  ASSERT_EQ(h.said.size(), 1u);
  EXPECT_EQ(ReadFile(dir_ + "/.git"), "gitdir: ../../repositories/app\n");
  // Settings and hooks go with it; the host's git works in the folder as before.
  EXPECT_EQ(Git({"--git-dir", Held(), "config", "core.fsmonitor"}),
            "touch /nonexistent/pwned; false");
  EXPECT_EQ(Git({"-C", dir_, "log", "--format=%s"}), "first");
  EXPECT_EQ(Git({"-C", dir_, "status", "--porcelain"}), "");
  EXPECT_EQ(HeldGitDirOf(dir_).value_or(""), Held());
  EXPECT_EQ(GitDirOf(dir_), Held());
  // Held already: nothing to do, nothing said.
  Holding again = HoldRepository(dir_, "app", false);
  EXPECT_EQ(again.state, Holding::State::kHeld);
  EXPECT_TRUE(again.said.empty());
}

TEST_F(HeldRepositoryTest, WhateverStandsInPlaceOfTheGitFileIsSetAside) {
  MakeRepository(dir_);
  HoldRepository(dir_, "app", true);
  auto put_back = [&](const std::string& expect) {
    Holding h = HoldRepository(dir_, "app", false);
    EXPECT_EQ(h.state, Holding::State::kHeld);
    ASSERT_FALSE(h.said.empty());
    EXPECT_NE(h.said[0].find(expect), std::string::npos) << h.said[0];
    EXPECT_EQ(ReadFile(dir_ + "/.git"), "gitdir: ../../repositories/app\n");
  };
  // A .git file that leads elsewhere (into the share).
  ::unlink((dir_ + "/.git").c_str());
  AtomicWrite(dir_ + "/.git", "gitdir: evil\n");
  put_back("set aside a .git file");
  // A link, a folder, nothing.
  ::unlink((dir_ + "/.git").c_str());
  ASSERT_EQ(::symlink("evil", (dir_ + "/.git").c_str()), 0);
  put_back("set aside a link");
  ::unlink((dir_ + "/.git").c_str());
  MakeDirs(dir_ + "/.git/hooks");
  // Meanwhile the host's git is still pointed at the held repository, never at that folder.
  EXPECT_EQ(HeldGitDirOf(dir_).value_or(""), Held());
  put_back("set aside a .git folder");
  ::unlink((dir_ + "/.git").c_str());
  put_back("put back the project's .git file");
  // Each set aside under a name no git reads, never removed.
  int refused = 0;
  for (const auto& name : ListDir(dir_)) refused += name.rfind(".git.refused-", 0) == 0;
  EXPECT_EQ(refused, 3);
  // Whatever the .git file says, the held repository is the project's.
  ::unlink((dir_ + "/.git").c_str());
  AtomicWrite(dir_ + "/.git", "gitdir: /etc\n");
  EXPECT_EQ(HeldGitDirOf(dir_).value_or(""), Held());
}

TEST_F(HeldRepositoryTest, ARepositoryThatMayBeTheSandboxsIsSetAsideNeverRead) {
  MakeRepository(dir_);
  // What would make the host's git read elsewhere, were it read.
  AtomicWrite(dir_ + "/.git/objects/info/alternates", home_.path() + "/secret/.git/objects\n");
  Holding h = HoldRepository(dir_, "app", false);
  EXPECT_EQ(h.state, Holding::State::kNone);
  ASSERT_EQ(h.said.size(), 2u);
  EXPECT_NE(h.said[0].find("set aside a .git folder of a project whose repository ss did not hold"),
            std::string::npos)
      << h.said[0];
  EXPECT_NE(h.said[1].find("if you made it yourself, give it to ss: mv "), std::string::npos);
  EXPECT_FALSE(PathExists(dir_ + "/.git"));
  EXPECT_FALSE(PathExists(Held()));
  int refused = 0;
  for (const auto& name : ListDir(dir_)) refused += name.rfind(".git.refused-", 0) == 0;
  EXPECT_EQ(refused, 1);
}

TEST(PlainRemoteUrl, NetworkAddressesOnly) {
  for (const char* url :
       {"https://github.com/octo/app.git", "ssh://git@github.com/octo/app.git",
        "git@github.com:octo/app.git", "ssh://host:2222/x", "me@host.example:x"}) {
    EXPECT_TRUE(PlainRemoteUrl(url)) << url;
  }
  for (const char* url :
       {"./.evil@x:y", "/abs/repo@h:p", "ext::sh@x:y", "ext::sh -c touch% /tmp/x", "file:///tmp/x",
        "../up@h:p", "-u@h:p", "me@-oProxyCommand=x:y", "https://-x/y", "https://h", "a@b",
        "git@github.com:octo/app.git\nx", "", "h:p", "me@h:", "fd::17"}) {
    EXPECT_FALSE(PlainRemoteUrl(url)) << url;
  }
}

TEST_F(HeldRepositoryTest, AProjectFolderReplacedByALinkIsNeverFollowed) {
  // Another repository of the host's, which a link in the project's place would lead to.
  std::string secret = home_.path() + "/secret";
  MakeRepository(secret);
  ASSERT_EQ(::rmdir(dir_.c_str()), 0);
  ASSERT_EQ(::symlink(secret.c_str(), dir_.c_str()), 0);
  try {
    HoldRepository(dir_, "app", false);
    FAIL() << "a link was followed";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitIoErr);
    EXPECT_NE(std::string(e.what()).find("is not a folder"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(PathExists(Held()));
  EXPECT_TRUE(IsDirectory(secret + "/.git"));
  EXPECT_FALSE(HeldGitDirOf(dir_));
}

TEST_F(HeldRepositoryTest, SubmodulesKeepTheRepositoryInTheFolder) {
  MakeRepository(dir_);
  MakeDirs(dir_ + "/.git/modules/lib");
  Holding h = HoldRepository(dir_, "app", true);
  EXPECT_EQ(h.state, Holding::State::kLeft);
  EXPECT_NE(h.why.find("submodules"), std::string::npos);
  EXPECT_TRUE(IsDirectory(dir_ + "/.git"));
  EXPECT_FALSE(HeldGitDirOf(dir_));
  // Left so when ss could trust it: never set aside later as a folder the sandbox may have made.
  Holding later = HoldRepository(dir_, "app", false);
  EXPECT_EQ(later.state, Holding::State::kLeft);
  EXPECT_TRUE(IsDirectory(dir_ + "/.git"));
}

TEST_F(HeldRepositoryTest, ANewProjectOfAnOldNameKeepsTheOldRepositoryAside) {
  MakeDirs(Held());
  AtomicWrite(Held() + "/HEAD", "ref: refs/heads/main\n");
  MakeRepository(dir_);
  Holding h = HoldRepository(dir_, "app", true);
  EXPECT_EQ(h.state, Holding::State::kHeld);
  EXPECT_EQ(Git({"-C", dir_, "log", "--format=%s"}), "first");
  int old = 0;
  for (const auto& name : ListDir(RepositoriesDir())) old += name.rfind("app.old-", 0) == 0;
  EXPECT_EQ(old, 1);
}

TEST_F(HeldRepositoryTest, OnlyProjectsFoldersHaveHeldRepositories) {
  MakeRepository(dir_);
  HoldRepository(dir_, "app", true);
  std::string elsewhere = home_.path() + "/elsewhere/app";
  MakeDirs(elsewhere);
  AtomicWrite(elsewhere + "/.git", "gitdir: ../../repositories/app\n");
  EXPECT_FALSE(HeldGitDirOf(elsewhere));
  EXPECT_FALSE(HeldGitDirOf(ProjectsDir() + "/Bad Name"));
  // A copy-mode project's repository is ss's only through ss's own .git file there.
  std::string copy = CopyProjectsDir() + "/app";
  MakeDirs(copy);
  AtomicWrite(copy + "/.git", "gitdir: elsewhere\n");
  EXPECT_FALSE(HeldGitDirOf(copy));
  ::unlink((copy + "/.git").c_str());
  AtomicWrite(copy + "/.git", HeldGitFile("app"));
  EXPECT_EQ(HeldGitDirOf(copy).value_or(""), Held());
  // First pass over every project: once; a folder named as a copy-mode project is not one.
  std::string other = ProjectsDir() + "/other";
  MakeRepository(other);
  MakeDirs(CopyProjectsDir() + "/cp");
  MakeRepository(ProjectsDir() + "/cp");
  HoldAllRepositories();
  EXPECT_TRUE(IsDirectory(ProjectsDir() + "/cp/.git"));
  EXPECT_FALSE(PathExists(HeldRepositoryDir("cp")));
  EXPECT_EQ(HeldGitDirOf(other).value_or(""), HeldRepositoryDir("other"));
  std::string third = ProjectsDir() + "/third";
  MakeRepository(third);
  HoldAllRepositories();
  EXPECT_TRUE(IsDirectory(third + "/.git"));
}

}  // namespace
}  // namespace ss
