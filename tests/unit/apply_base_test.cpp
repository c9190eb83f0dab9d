// The three-way decision of apply and the base record it is made against: every combination of
// base, host and copy, the record's round trip, its digests kept for unchanged files, and what it
// refuses to trust (a file changed while the copy was made, a path the host does not have, a link
// on the way).
#include "apply_base.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <ctime>
#include <vector>

#include "digest.hpp"
#include "fs.hpp"
#include "gtest/gtest.h"
#include "strings.hpp"

namespace ss {
namespace {

Version File(const std::string& data, bool exec = false) {
  Version v;
  v.kind = Version::kFile;
  v.exec = exec;
  v.digest = Sha256Hex(data);
  return v;
}
Version Link(const std::string& target) {
  Version v;
  v.kind = Version::kSymlink;
  v.digest = Sha256Hex(target);
  return v;
}
Version Of(Version::Kind k) {
  Version v;
  v.kind = k;
  return v;
}

TEST(ApplyDecide, EveryCombination) {
  Version none = Of(Version::kAbsent), unknown = Of(Version::kUnknown);
  Version a = File("a"), b = File("b"), c = File("c");
  // Only the agent changed it: taken (made, changed, deleted).
  EXPECT_EQ(Decide(a, a, b), Action::kTake);
  EXPECT_EQ(Decide(none, none, b), Action::kTake);
  EXPECT_EQ(Decide(a, a, none), Action::kTake);
  EXPECT_EQ(Decide(a, a, File("a", true)), Action::kTake);  // made executable
  EXPECT_EQ(Decide(a, a, Link("a")), Action::kTake);
  // Only the user changed it: kept, including a file the agent never saw.
  EXPECT_EQ(Decide(a, b, a), Action::kKeepHost);
  EXPECT_EQ(Decide(none, b, none), Action::kKeepHost);
  EXPECT_EQ(Decide(a, none, a), Action::kKeepHost);
  // Both, differently: a conflict, also change against deletion and two new files.
  EXPECT_EQ(Decide(a, b, c), Action::kConflict);
  EXPECT_EQ(Decide(a, b, none), Action::kConflict);
  EXPECT_EQ(Decide(a, none, b), Action::kConflict);
  EXPECT_EQ(Decide(none, a, b), Action::kConflict);
  // Both the same way: nothing to do.
  EXPECT_EQ(Decide(a, b, b), Action::kSame);
  EXPECT_EQ(Decide(a, none, none), Action::kSame);
  // Without a base every difference is a conflict; a special file never equals anything.
  EXPECT_EQ(Decide(unknown, a, b), Action::kConflict);
  EXPECT_EQ(Decide(unknown, none, b), Action::kConflict);
  EXPECT_EQ(Decide(unknown, a, a), Action::kSame);
  EXPECT_EQ(Decide(a, a, Of(Version::kOther)), Action::kTake);  // and the crossing refuses it
  EXPECT_EQ(Decide(a, Of(Version::kOther), b), Action::kConflict);
  EXPECT_EQ(Decide(a, a, unknown), Action::kConflict);  // the copy's version never arrived
}

class BaseRecordTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("SS_HOME", home_.path().c_str(), 1);
    dir_ = home_.path() + "/project";
    MakeDirs(dir_ + "/sub", 0755);
  }
  void TearDown() override { ::unsetenv("SS_HOME"); }
  void Write(const std::string& rel, const std::string& data) {
    AtomicWrite(Cat(dir_, "/", rel), data, 0644);
  }
  static struct timespec Now() {
    struct timespec t {};
    ::clock_gettime(CLOCK_REALTIME, &t);
    return t;
  }
  int Root() {
    root_ = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return root_;
  }
  ~BaseRecordTest() override {
    if (root_ >= 0) ::close(root_);
  }

  TempDir home_;
  std::string dir_;
  int root_ = -1;
};

TEST_F(BaseRecordTest, RecordsTheHostsDigestsAndReadsThemBack) {
  Write("a.txt", "one\n");
  Write("sub/b.sh", "#!/bin/sh\n");
  ::chmod((dir_ + "/sub/b.sh").c_str(), 0755);
  ASSERT_EQ(::symlink("a.txt", (dir_ + "/ln").c_str()), 0);
  Write("weird\tname\nwith breaks", "x");
  ::usleep(20000);
  BaseRecord r = BaseRecord::Make(
      dir_, {"a.txt", "sub/b.sh", "ln", "weird\tname\nwith breaks", "../escape", "/abs"}, Now(),
      BaseRecord());
  ASSERT_TRUE(r.recorded());
  EXPECT_EQ(r.At("a.txt"), File("one\n"));
  EXPECT_EQ(r.At("sub/b.sh"), File("#!/bin/sh\n", true));
  EXPECT_EQ(r.At("ln"), Link("a.txt"));
  EXPECT_EQ(r.At("weird\tname\nwith breaks"), File("x"));
  EXPECT_EQ(r.At("not-named").kind, Version::kAbsent);  // named by nobody: absent
  r.Save("box", "app");
  EXPECT_EQ(::access(BaseRecord::PathOf("box", "app").c_str(), F_OK), 0);
  struct stat st {};
  ASSERT_EQ(::stat(BaseRecord::PathOf("box", "app").c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0600u);
  BaseRecord back = BaseRecord::Load("box", "app");
  ASSERT_TRUE(back.recorded());
  EXPECT_EQ(back.token(), r.token());
  for (const char* p : {"a.txt", "sub/b.sh", "ln", "weird\tname\nwith breaks"}) {
    EXPECT_EQ(back.At(p), r.At(p)) << p;
  }
  EXPECT_EQ(back.At("../escape").kind, Version::kAbsent);
  // None for another sandbox; forgetting removes it.
  EXPECT_FALSE(BaseRecord::Load("other", "app").recorded());
  EXPECT_EQ(BaseRecord::Load("other", "app").At("a.txt").kind, Version::kUnknown);
  // Forgetting a project leaves the sandboxes excepted (a folder's own, its copy of the same
  // name a folder's); forgetting a sandbox removes all of its records.
  r.Save("folder-box", "app");
  BaseRecord::ForgetProject("app", {"folder-box"});
  EXPECT_FALSE(BaseRecord::Load("box", "app").recorded());
  EXPECT_TRUE(BaseRecord::Load("folder-box", "app").recorded());
  BaseRecord::ForgetSandbox("folder-box");
  EXPECT_FALSE(BaseRecord::Load("folder-box", "app").recorded());
}

TEST_F(BaseRecordTest, WhatChangedWhileTheCopyWasMadeOrIsMissingIsUnknown) {
  Write("old.txt", "old");
  ::usleep(20000);
  struct timespec since = Now();
  ::usleep(20000);
  Write("new.txt", "changed during the sync");
  BaseRecord r = BaseRecord::Make(dir_, {"old.txt", "new.txt", "gone.txt"}, since, BaseRecord());
  EXPECT_EQ(r.At("old.txt"), File("old"));
  EXPECT_EQ(r.At("new.txt").kind, Version::kUnknown);
  EXPECT_EQ(r.At("gone.txt").kind, Version::kUnknown);
}

TEST_F(BaseRecordTest, KeepsDigestsOfUnchangedFilesAndRereadsChangedOnes) {
  Write("a.txt", "one");
  ::usleep(20000);
  BaseRecord first = BaseRecord::Make(dir_, {"a.txt"}, Now(), BaseRecord());
  // A record whose digest is deliberately wrong but whose status matches is trusted as a cache...
  BaseRecord cached = first;
  struct stat st {};
  ASSERT_EQ(::stat((dir_ + "/a.txt").c_str(), &st), 0);
  cached.Set("a.txt", File("cached"), &st);
  EXPECT_EQ(BaseRecord::Make(dir_, {"a.txt"}, Now(), cached).At("a.txt"), File("cached"));
  // ...and a file that changed is read again.
  Write("a.txt", "two");
  ::usleep(20000);
  EXPECT_EQ(BaseRecord::Make(dir_, {"a.txt"}, Now(), cached).At("a.txt"), File("two"));
  // A version set without a status is never taken for a cache.
  BaseRecord uncached = first;
  uncached.Set("a.txt", File("copy's"));
  EXPECT_EQ(BaseRecord::Make(dir_, {"a.txt"}, Now(), uncached).At("a.txt"), File("two"));
}

TEST_F(BaseRecordTest, HostVersionNeverFollowsALink) {
  TempDir outside;
  AtomicWrite(outside.path() + "/secret", "s", 0644);
  ASSERT_EQ(::symlink(outside.path().c_str(), (dir_ + "/out").c_str()), 0);
  Write("sub/x", "x");
  EXPECT_EQ(HostVersion(Root(), "out/secret").kind, Version::kAbsent);
  EXPECT_EQ(HostVersion(Root(), "out"), Link(outside.path()));
  EXPECT_EQ(HostVersion(Root(), "sub/x/y").kind, Version::kAbsent);  // a file on the way
  EXPECT_EQ(HostVersion(Root(), "sub").kind, Version::kOther);       // a directory
  EXPECT_EQ(HostVersion(Root(), "../project/sub/x").kind, Version::kOther);
  ASSERT_EQ(::mkfifo((dir_ + "/fifo").c_str(), 0644), 0);
  EXPECT_EQ(HostVersion(Root(), "fifo").kind, Version::kOther);
}

TEST_F(BaseRecordTest, AMalformedRecordIsNoRecord) {
  MakeDirs(home_.path() + "/.ss/bases/box", 0700);
  for (const std::string& text : std::vector<std::string>{
           "", "ss-base 1 tok", "ss-base 2 tok\n", "ss-base 1 tok\nf\t0\tabc\t1\t1\t1\t1",
           std::string("ss-base 1 tok\nf\t0\tabc\t1\tx\t1\t1\t1\ta") + '\0',
           std::string("ss-base 1 tok\nf\t0\tabc\t1\t1\t1\t1\t1\t../a") + '\0'}) {
    AtomicWrite(BaseRecord::PathOf("box", "app"), text, 0600);
    EXPECT_FALSE(BaseRecord::Load("box", "app").recorded()) << Printable(text);
  }
}

}  // namespace
}  // namespace ss
