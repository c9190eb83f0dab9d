#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <thread>

#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "fs_at.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "strings.hpp"

namespace ss {
namespace {

TEST(Process, CapturesOutputAndStatus) {
  ProcessResult r = ss::Run({"/bin/sh", "-c", "printf out; printf err >&2; exit 3"});
  EXPECT_EQ(r.out, "out");
  EXPECT_EQ(r.err, "err");
  EXPECT_EQ(r.status, 3);
}

TEST(Process, ArgvIsNeverReSplit) {
  ProcessResult r = ss::Run({"printf", "%s|", "a b", "$HOME", "*", ""});
  EXPECT_EQ(r.out, "a b|$HOME|*||");
}

TEST(Process, FeedsLargeInput) {
  std::string big(5 * 1024 * 1024, 'x');
  ProcessOptions o;
  o.input = big;
  ProcessResult r = ss::Run({"cat"}, o);
  EXPECT_EQ(r.out.size(), big.size());
}

TEST(Process, EnvAndCwd) {
  ProcessOptions o;
  o.env = {{"SS_TEST_X", "y z"}};
  o.cwd = "/";
  ProcessResult r = ss::Run({"/bin/sh", "-c", "printf '%s %s' \"$SS_TEST_X\" \"$PWD\""}, o);
  EXPECT_EQ(r.out, "y z /");
}

TEST(Process, PassesDescriptorsUnderTheirNewNumbers) {
  int fds[2];
  ASSERT_EQ(platform::Pipe(fds), 0);
  ProcessOptions o;
  // The write end lands on 3, whatever its number here (even 3 itself).
  o.pass_fds = {{fds[1], 3}};
  pid_t pid = Spawn({"/bin/sh", "-c", "echo through-3 >&3"}, "", o);
  ::close(fds[1]);
  EXPECT_EQ(WaitPid(pid), 0);
  char buf[64] = {};
  ssize_t n = ::read(fds[0], buf, sizeof buf - 1);
  ::close(fds[0]);
  EXPECT_EQ(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0), "through-3\n");
}

TEST(Process, InheritsNoOtherDescriptors) {
  // An inherited descriptor without close-on-exec (as a test runner's pipe is) stays behind.
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  int fds[2] = {::fcntl(pipe_fds[0], F_DUPFD, 50), ::fcntl(pipe_fds[1], F_DUPFD, 50)};
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
  ProcessOptions o;
  o.pass_fds = {{::open("/dev/null", O_RDONLY | O_CLOEXEC), 5}};
  ProcessResult r = ss::Run({"/bin/sh", "-c", "ls /proc/self/fd"}, o);
  ::close(o.pass_fds[0].first);
  ::close(fds[0]);
  ::close(fds[1]);
  // 0, 1, 2, the passed 5, and the descriptor ls reads /proc/self/fd through.
  std::vector<std::string> open;
  for (const auto& line : SplitLines(r.out)) open.push_back(line);
  EXPECT_EQ(open.size(), 5u) << r.out;
  for (const auto& fd : open) {
    EXPECT_NE(fd, std::to_string(fds[0]));
    EXPECT_NE(fd, std::to_string(fds[1]));
  }
  EXPECT_NE(std::find(open.begin(), open.end(), "5"), open.end()) << r.out;
}

TEST(Process, Timeout) {
  ProcessOptions o;
  o.timeout = std::chrono::milliseconds(200);
  auto start = std::chrono::steady_clock::now();
  ProcessResult r = ss::Run({"sleep", "10"}, o);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
}

TEST(Process, MissingProgramIsUnavailable) {
  ProcessOptions o;
  o.unlisted = true;
  try {
    ss::Run({"ss-no-such-program-xyz"}, o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitUnavailable);
  }
}

TEST(Process, ProgramsOutsideThePackageTableAreRefused) {
  // ss runs nothing lib/packages.tsv does not list: a new command needs its row (its package).
  try {
    ss::Run({"ss-no-such-program-xyz"});
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitSoftware);
    EXPECT_STREQ(e.what(),
                 "internal: ss ran 'ss-no-such-program-xyz', which lib/packages.tsv does not list");
  }
}

TEST(Process, RunCheckedNamesTheFailure) {
  try {
    RunChecked({"/bin/sh", "-c", "echo boom >&2; exit 2"}, "cannot do it");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "cannot do it: /bin/sh exited with status 2");
    EXPECT_EQ(e.details(), std::vector<std::string>{"  boom"});
  }
}

TEST(Fs, AtomicWriteReplacesWholeFiles) {
  TempDir dir;
  std::string path = dir.path() + "/f";
  AtomicWrite(path, "one", 0600);
  AtomicWrite(path, "two", 0600);
  EXPECT_EQ(ReadFile(path), "two");
  struct stat st;
  ASSERT_EQ(::stat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
}

TEST(Fs, RemoveTreeNeverFollowsSymlinks) {
  TempDir outside, dir;
  AtomicWrite(outside.path() + "/keep", "x");
  MakeDirs(dir.path() + "/a/b");
  ASSERT_EQ(::symlink(outside.path().c_str(), (dir.path() + "/a/link").c_str()), 0);
  RemoveTree(dir.path() + "/a");
  EXPECT_FALSE(PathExists(dir.path() + "/a"));
  EXPECT_EQ(ReadFile(outside.path() + "/keep"), "x");
}

TEST(Fs, RemoveTreeTakesTreesDeeperThanAPathAndTheOpenFilesLimit) {
  // 3,000 folders of 100-byte names: a path of 300 KB (PATH_MAX is 4 KB), removed with 128 files
  // open at most. The removal opens only a few folders at once.
  TempDir dir;
  MakeDirs(dir.path() + "/top");
  {
    Fd at(::open((dir.path() + "/top").c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    std::string name(100, 'd');
    for (int i = 0; i < 3000; ++i) {
      ASSERT_EQ(::mkdirat(at.get(), name.c_str(), 0755), 0);
      if (i % 500 == 0) {
        Fd file(::openat(at.get(), "f", O_WRONLY | O_CREAT | O_CLOEXEC, 0644));
        ASSERT_TRUE(file.ok());
      }
      at = Fd(::openat(at.get(), name.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
      ASSERT_TRUE(at.ok());
    }
  }
  struct rlimit was;
  ASSERT_EQ(::getrlimit(RLIMIT_NOFILE, &was), 0);
  struct rlimit low = was;
  low.rlim_cur = 128;
  ASSERT_EQ(::setrlimit(RLIMIT_NOFILE, &low), 0);
  bool removed = true;
  try {
    RemoveTree(dir.path() + "/top/");  // a trailing slash names the same folder
  } catch (const Error& e) {
    removed = false;
    ADD_FAILURE() << e.what();
  }
  ::setrlimit(RLIMIT_NOFILE, &was);
  EXPECT_TRUE(removed);
  EXPECT_FALSE(PathExists(dir.path() + "/top"));
}

TEST(Fs, ElidedPathKeepsTheEndsOfALongPath) {
  std::vector<std::string_view> few{"a", "", "b"};
  EXPECT_EQ(ElidedPath("~/p", few, 4), "~/p/a/b");
  std::vector<std::string_view> many{"1", "2", "3", "4", "5", "6", "7"};
  EXPECT_EQ(ElidedPath("/t", many, 4), "/t/1/2/…3 more folders…/6/7");
  EXPECT_EQ(ElidedPath("/t", many, 7), "/t/1/2/3/4/5/6/7");
}

TEST(Fs, LocksExclude) {
  TempDir dir;
  std::string lock_path = dir.path() + "/lock";
  FileLock held(lock_path);
  EXPECT_FALSE(FileLock::TryLock(lock_path).has_value());
  EXPECT_THROW(FileLock(lock_path, FileLock::kExclusive, std::chrono::milliseconds(50), "x"),
               Error);
}

}  // namespace
}  // namespace ss
