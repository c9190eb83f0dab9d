// The platform layer on the system the tests run on (platform.hpp), and doctor's Mac checks
// from the facts that layer reports.

#include "platform.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <set>

#include "fd.hpp"
#include "fs.hpp"
#include "health.hpp"

namespace ss {
namespace {

bool CloseOnExec(int fd) { return (::fcntl(fd, F_GETFD) & FD_CLOEXEC) != 0; }
bool NonBlocking(int fd) { return (::fcntl(fd, F_GETFL) & O_NONBLOCK) != 0; }

TEST(Platform, PipesAndSocketsAreCloseOnExec) {
  int fds[2];
  ASSERT_EQ(platform::Pipe(fds), 0);
  Fd r(fds[0]), w(fds[1]);
  EXPECT_TRUE(CloseOnExec(r.get()) && CloseOnExec(w.get()));
  EXPECT_FALSE(NonBlocking(r.get()));
  ASSERT_EQ(platform::Pipe(fds, /*nonblock=*/true), 0);
  Fd r2(fds[0]), w2(fds[1]);
  EXPECT_TRUE(NonBlocking(r2.get()) && NonBlocking(w2.get()));
  Fd s(platform::Socket(AF_UNIX, SOCK_STREAM, /*nonblock=*/true));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(CloseOnExec(s.get()) && NonBlocking(s.get()));
}

TEST(Platform, ThisProcessAndItsArguments) {
  std::string self = platform::ExecutablePath();
  EXPECT_EQ(self.substr(self.rfind('/') + 1), "ss-unit-tests") << self;
  auto me = platform::Process(::getpid());
  ASSERT_TRUE(me.has_value());
  EXPECT_EQ(me->name, std::string("ss-unit-tests").substr(0, 15));
  EXPECT_GT(me->start, 0u);
  EXPECT_FALSE(me->ended);
  auto args = platform::ProcessArgs(::getpid());
  ASSERT_FALSE(args.empty());
  EXPECT_NE(args[0].find("ss-unit-tests"), std::string::npos) << args[0];
  auto pids = platform::Processes();
  EXPECT_NE(std::find(pids.begin(), pids.end(), ::getpid()), pids.end());
}

TEST(Platform, AZombieHasEndedAndAReapedProcessIsGone) {
  pid_t child = ::fork();
  if (child == 0) ::_exit(0);
  ASSERT_GT(child, 0);
  // Until it is reaped, it is a zombie.
  for (int i = 0; i < 200; ++i) {
    auto p = platform::Process(child);
    if (p && p->ended) break;
    ::usleep(10000);
  }
  auto zombie = platform::Process(child);
  ASSERT_TRUE(zombie.has_value());
  EXPECT_TRUE(zombie->ended);
  int st;
  ASSERT_EQ(::waitpid(child, &st, 0), child);
  EXPECT_FALSE(platform::Process(child).has_value());
  EXPECT_TRUE(platform::ProcessArgs(child).empty());
}

TEST(Platform, RenameNoReplaceNeverOverwrites) {
  TempDir dir;
  AtomicWrite(dir.path() + "/a", "a");
  AtomicWrite(dir.path() + "/b", "b");
  Fd d(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  int taken = platform::RenameNoReplace(d.get(), "a", "b");
  if (taken == ENOSYS) GTEST_SKIP() << "this file system cannot rename without replacing";
  EXPECT_TRUE(taken == EEXIST || taken == ENOTEMPTY) << taken;
  EXPECT_EQ(ReadFile(dir.path() + "/b"), "b");
  EXPECT_EQ(platform::RenameNoReplace(d.get(), "a", "c"), 0);
  EXPECT_EQ(ReadFile(dir.path() + "/c"), "a");
}

TEST(Platform, DirReaderSeesEveryEntryWithItsType) {
  TempDir dir;
  AtomicWrite(dir.path() + "/file", "x");
  MakeDirs(dir.path() + "/sub");
  ASSERT_EQ(::symlink("file", (dir.path() + "/link").c_str()), 0);
  Fd d(::open(dir.path().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  std::set<std::string> seen;
  {
    platform::DirReader reader(d.get());
    while (auto e = reader.Next()) {
      std::string name = e->name;
      if (name == "." || name == "..") continue;
      seen.insert(name);
      if (e->type == DT_UNKNOWN) continue;  // a file system that does not say
      unsigned char want = name == "file" ? DT_REG : name == "sub" ? DT_DIR : DT_LNK;
      EXPECT_EQ(e->type, want) << name;
    }
  }
  EXPECT_EQ(seen, (std::set<std::string>{"file", "sub", "link"}));
  struct stat st;
  EXPECT_EQ(::fstat(d.get(), &st), 0) << "the reader closed the caller's descriptor";
}

TEST(Platform, TimesInNanoseconds) {
  TempDir dir;
  std::string f = dir.path() + "/f";
  AtomicWrite(f, "x");
  struct timespec times[2] = {{1000, 5}, {2000, 123456789}};
  ASSERT_EQ(::utimensat(AT_FDCWD, f.c_str(), times, 0), 0);
  struct stat st;
  ASSERT_EQ(::stat(f.c_str(), &st), 0);
  EXPECT_EQ(platform::ModifiedNs(st), 2000123456789);
  EXPECT_GT(platform::ChangedNs(st), 0);
}

TEST(Platform, HostFacts) {
  EXPECT_GT(platform::MemoryBytes(), 64LL << 20);
  EXPECT_GT(platform::MappedIds(), 0u);
  auto mac = platform::Mac();
  EXPECT_EQ(mac.is_macos, std::string(platform::kName) == "macos");
}

// An image build's mounts stay in a namespace of its own; afterwards the process is back in the
// host's, where what it mounts next (a sandbox's views) must be seen by the engine.
TEST(Platform, PrivateMountsAndBackAgain) {
  if (::geteuid() != 0) GTEST_SKIP() << "a mount namespace needs root";
  auto ns = [] {
    struct stat st {};
    return ::stat("/proc/self/ns/mnt", &st) == 0 ? st.st_ino : 0;
  };
  ino_t host = ns();
  ASSERT_NE(host, 0u);
  pid_t pid = ::fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    int previous = -1;
    if (platform::PrivateMounts(previous) != 0 || previous < 0) ::_exit(2);
    if (ns() == host) ::_exit(3);  // the build's own
    if (platform::ReturnToMounts(previous) != 0) ::_exit(4);
    ::_exit(ns() == host ? 0 : 5);  // the host's again
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
}

TEST(MacChecks, NothingOffAMac) { EXPECT_TRUE(MacChecks(platform::MacHost{}).empty()); }

TEST(MacChecks, AGoodMac) {
  platform::MacHost mac{true, true, true, "15.1"};
  auto checks = MacChecks(mac);
  ASSERT_EQ(checks.size(), 3u);
  EXPECT_FALSE(AnyFailed(checks));
  EXPECT_EQ(checks[0].name, "macos");
  EXPECT_EQ(checks[0].detail, "macOS 15.1");
  EXPECT_EQ(checks[1].name, "apple silicon");
  EXPECT_EQ(checks[2].name, "virtualization.framework");
  for (const auto& c : checks) EXPECT_EQ(c.status, CheckStatus::kOk) << c.name;
}

TEST(MacChecks, WhatAMacLacksIsSaidWithTheWayOut) {
  platform::MacHost old{true, false, false, "12.7"};
  auto checks = MacChecks(old);
  ASSERT_EQ(checks.size(), 3u);
  EXPECT_EQ(checks[0].status, CheckStatus::kFailed);
  EXPECT_NE(checks[0].detail.find("macOS 12.7"), std::string::npos) << checks[0].detail;
  EXPECT_NE(checks[0].detail.find("13 (Ventura)"), std::string::npos) << checks[0].detail;
  EXPECT_FALSE(checks[0].fix.empty());
  // An Intel Mac can still run Lima and Docker: a warning, not a failure.
  EXPECT_EQ(checks[1].status, CheckStatus::kWarning);
  EXPECT_NE(checks[1].detail.find("Lume runs on Apple Silicon only"), std::string::npos);
  EXPECT_EQ(checks[2].status, CheckStatus::kFailed);
  EXPECT_NE(checks[2].detail.find("kern.hv_support"), std::string::npos);
  EXPECT_FALSE(checks[2].fix.empty());
  EXPECT_TRUE(AnyFailed(checks));
}

}  // namespace
}  // namespace ss
