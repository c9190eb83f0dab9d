// The LXD backend against a stand-in `lxc` on PATH: what it asks LXD, and what it does with
// LXD's answers.
#include "backend_lxd.hpp"

#include <gtest/gtest.h>

#include <cstdlib>

#include "error.hpp"
#include "fs.hpp"
#include "host_setup.hpp"
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
  std::vector<std::string> Calls() const {
    return SplitLines(ReadFile(Cat(dir_.path(), "/calls")));
  }
  const std::string& dir() const { return dir_.path(); }

 private:
  TempDir dir_;
  std::string old_path_;
};

// Calls of the stand-in other than its queries.
std::vector<std::string> Actions(const std::vector<std::string>& calls) {
  std::vector<std::string> out;
  for (const auto& c : calls) {
    if (c.rfind("query ", 0) != 0) out.push_back(c);
  }
  return out;
}

// An lxc that says the instance has `status` (103 running, 102 stopped), has no snapshots, and
// answers `snapshot` with the script `snapshot`.
std::string Lxd(int status, const std::string& snapshot) {
  return Cat(
      "case $1 in\n"
      "  query) case $2 in *snapshots*) echo '[]' ;; *) echo '{\"status_code\": ",
      status,
      ", \"config\": {\"user.ss.sandbox\": \"true\"}}' ;; esac ;;\n"
      "  snapshot) ",
      snapshot,
      " ;;\n"
      "esac\n");
}

// LXD copies a running container's files one by one; one the guest removes meanwhile fails
// the copy and leaves a partial one on disk. The container is frozen while it is copied.
TEST_F(FakeLxc, ARunningContainerIsFrozenWhileItsSnapshotIsTaken) {
  Use(Lxd(103, "exit 0"));
  LxdBackend("").TakeSnapshot("box", "clean-baseline");
  EXPECT_EQ(Actions(Calls()),
            (std::vector<std::string>{"pause box", "snapshot box clean-baseline", "start box"}));
}

TEST_F(FakeLxc, AFailedSnapshotStillThawsTheContainer) {
  Use(Lxd(103, "echo 'Error: Failed to write: no space left on device' >&2; exit 1"));
  try {
    LxdBackend("").TakeSnapshot("box", "s1");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "cannot snapshot 'box': Failed to write: no space left on device");
  }
  EXPECT_EQ(Actions(Calls()),
            (std::vector<std::string>{"pause box", "snapshot box s1", "start box"}));
}

TEST_F(FakeLxc, AStoppedContainerIsSnapshotAsItIs) {
  Use(Lxd(102, "exit 0"));
  LxdBackend("").TakeSnapshot("box", "s1");
  EXPECT_EQ(Actions(Calls()), (std::vector<std::string>{"snapshot box s1"}));
}

// A path longer than the host's 4096 bytes stops LXD's walk of the container's files: the error
// says so in a few words (not with the path), and nothing of the snapshot is kept.
TEST_F(FakeLxc, ASnapshotStoppedByADeepPathSaysSoInAFewWords) {
  Use(Lxd(102, Cat("echo 'Error: Create instance snapshot: lstat /var/lib/lxd/storage-pools/"
                   "default/containers/box/rootfs/",
                   std::string(5000, 'a'), ": file name too long' >&2; exit 1")));
  try {
    LxdBackend("").TakeSnapshot("box", "s1");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitCantCreate);
    EXPECT_EQ(std::string(e.what()),
              "cannot snapshot 'box': a path in it is longer than the 4096 bytes LXD can read on "
              "the host; no snapshot was kept");
  }
}

// The pool's loop file is sparse: sized as LXD sizes its own, never past what the disk can hold
// a fifth of.
TEST(LxdPool, AFifthOfTheFreeSpaceFiveTo30GiB) {
  constexpr int64_t kGiB = 1024LL * 1024 * 1024;
  EXPECT_EQ(LxdPoolBytes(100 * kGiB), 20 * kGiB);
  EXPECT_EQ(LxdPoolBytes(57 * kGiB), 11 * kGiB);
  EXPECT_EQ(LxdPoolBytes(10 * kGiB), 5 * kGiB);
  EXPECT_EQ(LxdPoolBytes(0), 5 * kGiB);
  EXPECT_EQ(LxdPoolBytes(1024 * kGiB), 30 * kGiB);
  EXPECT_EQ(LxdPoolBytes(-1), 30 * kGiB);  // unknown: LXD's largest
}

TEST(LxdLimits, ProcessesAndOpenFilesBesideCpusAndMemory) {
  Resources r;
  r.cpus = 4;
  r.memory = 8LL << 30;
  r.processes = 4096;
  r.open_files = 65536;
  EXPECT_EQ(LxdLimits(r),
            (std::vector<std::string>{"limits.cpu=0-3", "limits.memory=8192MiB",
                                      "limits.processes=4096", "limits.kernel.nofile=65536"}));
  EXPECT_TRUE(LxdLimits(Resources{}).empty());
}

}  // namespace
}  // namespace ss
