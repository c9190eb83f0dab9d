// The LXD backend against a stand-in `lxc` on PATH: what it asks LXD, and what it does with
// LXD's answers.
#include "backend_lxd.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "error.hpp"
#include "fs.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// An `lxc` that logs its arguments and answers from the script `body` ($1 is the verb).
class FakeLxc : public ::testing::Test {
 protected:
  void Use(const std::string& body) {
    std::string script = Cat("#!/bin/sh\necho \"$*\" >> '", dir_.path(), "/calls'\n", body);
    AtomicWrite(Cat(dir_.path(), "/lxc"), script, 0755);
    old_path_ = std::getenv("PATH");
    ::setenv("PATH", Cat(dir_.path(), ":", old_path_).c_str(), 1);
  }
  void TearDown() override {
    if (!old_path_.empty()) ::setenv("PATH", old_path_.c_str(), 1);
  }
  std::vector<std::string> Calls() const { return SplitLines(ReadFile(Cat(dir_.path(), "/calls"))); }
  const std::string& dir() const { return dir_.path(); }

 private:
  TempDir dir_;
  std::string old_path_;
};

// LXD copies a running container's files one at a time; one removed meanwhile fails the copy.
TEST_F(FakeLxc, SnapshotIsTakenAgainWhenAFileVanishedDuringTheCopy) {
  Use(Cat("case $1 in\n"
          "  query) echo '[]' ;;\n"
          "  snapshot)\n"
          "    [ -e '", dir(), "/failed' ] && exit 0\n"
          "    touch '", dir(), "/failed'\n"
          "    echo 'Error: Create instance snapshot: readdirent /var/lib/lxd/storage-pools/"
          "default/containers/box/rootfs/tmp/systemd-private-x: no such file or directory' >&2\n"
          "    exit 1 ;;\n"
          "esac\n"));
  LxdBackend lxd("");
  lxd.TakeSnapshot("box", "clean-baseline");
  std::vector<std::string> snapshots;
  for (const auto& call : Calls()) {
    if (call.rfind("snapshot ", 0) == 0) snapshots.push_back(call);
  }
  EXPECT_EQ(snapshots, (std::vector<std::string>{"snapshot box clean-baseline",
                                                 "snapshot box clean-baseline"}));
}

TEST_F(FakeLxc, SnapshotIsNotRetriedForOtherFailures) {
  Use("case $1 in\n"
      "  query) echo '[]' ;;\n"
      "  snapshot) echo 'Error: Failed to write: no space left on device' >&2; exit 1 ;;\n"
      "esac\n");
  LxdBackend lxd("");
  try {
    lxd.TakeSnapshot("box", "s1");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot snapshot 'box': Failed to write: no space left on device");
  }
  int snapshots = 0;
  for (const auto& call : Calls()) snapshots += call.rfind("snapshot ", 0) == 0;
  EXPECT_EQ(snapshots, 1);
}

TEST_F(FakeLxc, SnapshotGivesUpAfterThreeTries) {
  Use("case $1 in\n"
      "  query) echo '[]' ;;\n"
      "  snapshot) echo 'Error: Create instance snapshot: lstat x: no such file or directory' >&2;"
      " exit 1 ;;\n"
      "esac\n");
  LxdBackend lxd("");
  EXPECT_THROW(lxd.TakeSnapshot("box", "s1"), Error);
  int snapshots = 0;
  for (const auto& call : Calls()) snapshots += call.rfind("snapshot ", 0) == 0;
  EXPECT_EQ(snapshots, 3);
}

}  // namespace
}  // namespace ss
