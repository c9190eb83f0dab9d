// Id-mapped views: the owner's files seen as another id, the other id's writes stored as the
// owner's, nothing else writable; kept when asked again, replaced when the ids change.
#include "idmap_view.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cerrno>

#include "error.hpp"
#include "fs.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// errno of creating the file `name` in `dir` as uid/gid (0 when it worked), in a child that
// enters `dir` first, as a sandbox does (the views' own folder is root's alone).
int CreateAs(uid_t uid, gid_t gid, const std::string& dir, const char* name) {
  pid_t pid = ::fork();
  if (pid == 0) {
    if (::chdir(dir.c_str()) != 0) ::_exit(254);
    if (::setresgid(gid, gid, gid) != 0 || ::setresuid(uid, uid, uid) != 0) ::_exit(255);
    int fd = ::open(name, O_WRONLY | O_CREAT | O_EXCL, 0644);
    ::_exit(fd >= 0 ? 0 : errno);
  }
  int st = 0;
  ::waitpid(pid, &st, 0);
  return WEXITSTATUS(st);
}

class IdmapView : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "id-mapped views need root";
    dir_ = ViewsDir(Cat("unit-test:", ::getpid(), ":", reinterpret_cast<uintptr_t>(this)));
  }
  void TearDown() override {
    if (!dir_.empty()) RemoveViews(dir_);
  }
  std::string dir_;
  TempDir source_;
};

TEST_F(IdmapView, OwnersFilesAppearAsTheSandboxUsersAndItsWritesAsTheOwners) {
  std::string view = dir_ + "/projects";
  AtomicWrite(source_.path() + "/host.txt", "hi\n", 0644);
  EnsureView(source_.path(), view, {0, 0}, {1000, 1000});
  struct stat st;
  ASSERT_EQ(::stat((view + "/host.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 1000u);
  EXPECT_EQ(st.st_gid, 1000u);
  EXPECT_EQ(CreateAs(1000, 1000, view, "made.txt"), 0);
  ASSERT_EQ(::stat((source_.path() + "/made.txt").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 0u);
  EXPECT_EQ(st.st_gid, 0u);
  // No other id writes through it: root inside a container without a user namespace neither.
  EXPECT_EQ(CreateAs(0, 0, view, "by-root.txt"), EOVERFLOW);
  EXPECT_EQ(CreateAs(1001, 1001, view, "by-other.txt"), EACCES);
  EXPECT_FALSE(PathExists(source_.path() + "/by-root.txt"));
}

TEST_F(IdmapView, KeptWhenTheSameAndReplacedWhenTheIdsChange) {
  std::string view = dir_ + "/projects";
  EnsureView(source_.path(), view, {0, 0}, {1000, 1000});
  EnsureView(source_.path(), view, {0, 0}, {1000, 1000});
  EnsureView(source_.path(), view, {0, 0}, {101000, 101000});
  AtomicWrite(source_.path() + "/f", "", 0644);
  struct stat st;
  ASSERT_EQ(::stat((view + "/f").c_str(), &st), 0);
  EXPECT_EQ(st.st_uid, 101000u);
  // One mount, not a stack: a single unmount leaves the empty mount point.
  RemoveViews(dir_);
  EXPECT_FALSE(PathExists(dir_));
  EXPECT_TRUE(PathExists(source_.path() + "/f"));
}

TEST_F(IdmapView, AFolderThatCannotBeMappedIsRefusedWithTheReason) {
  try {
    EnsureView("/proc", dir_ + "/proc", {0, 0}, {1000, 1000});
    FAIL() << "procfs was mapped";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitUnavailable);
    EXPECT_STREQ(e.what(), "cannot share /proc with the sandbox's user");
  }
}

}  // namespace
}  // namespace ss
