// Snapshots through the sandbox layer, against the in-memory backend: names, the default name,
// taking, listing and deleting, and what a restore brings back.
#include "snapshot.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "backend_factory.hpp"
#include "backend_fake.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "sandbox.hpp"

namespace ss {
namespace {

int CodeOf(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.code();
  }
  return 0;
}

TEST(SnapshotName, ValidAndInvalid) {
  for (const char* ok :
       {"before-refactor", "clean-baseline", "snap-20260211-143005", "v1.2_x", "A"}) {
    EXPECT_EQ(SnapshotNameProblem(ok), std::nullopt) << ok;
  }
  for (const char* bad : {"", "-x", ".x", "a/b", "a b", "naïve", "x;rm"}) {
    EXPECT_NE(SnapshotNameProblem(bad), std::nullopt) << bad;
  }
  EXPECT_NE(SnapshotNameProblem(std::string(64, 'a')), std::nullopt);
  EXPECT_EQ(SnapshotNameProblem(std::string(63, 'a')), std::nullopt);
  EXPECT_EQ(CodeOf([] { ValidateSnapshotName("a/b"); }), kExitDataErr);
}

TEST(SnapshotName, DefaultIsTheTimeInUtcAndNeverTaken) {
  SystemTime t = *ParseRfc3339("2026-02-11T14:30:05Z");
  EXPECT_EQ(DefaultSnapshotName(t, {}), "snap-20260211-143005");
  std::vector<Snapshot> taken = {{"snap-20260211-143005", t}, {"snap-20260211-143005-2", t}};
  EXPECT_EQ(DefaultSnapshotName(t, taken), "snap-20260211-143005-3");
}

class SnapshotTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("SS_HOME", home_.path().c_str(), 1);
    RegisterBackend("fake", [this](const Config&) {
      auto b = std::make_unique<FakeBackend>();
      b->machines = machines_;
      last_ = b.get();
      return b;
    });
    MakeDirs(StateDir() + "/sandboxes/box");
    AtomicWrite(StateDir() + "/sandboxes/box/sandbox.json",
                "{\"kind\":\"SandboxRecord\",\"version\":1,\"backend\":\"fake\"}\n");
    machines_["box"].state = SandboxState::kRunning;
  }
  void TearDown() override { ::unsetenv("SS_HOME"); }

  TempDir home_;
  std::map<std::string, FakeBackend::Machine> machines_;
  FakeBackend* last_ = nullptr;
};

TEST_F(SnapshotTest, TakeListDelete) {
  Sandbox s("box", Config::Parse("", "config.yaml"));
  EXPECT_TRUE(ListSnapshots(s).empty());
  Snapshot taken = TakeSnapshot(s, "before");
  EXPECT_EQ(taken.name, "before");
  EXPECT_EQ(CodeOf([&] { TakeSnapshot(s, "before"); }), kExitCantCreate);
  EXPECT_EQ(CodeOf([&] { TakeSnapshot(s, "bad/name"); }), kExitDataErr);
  TakeSnapshot(s, "after");
  auto list = ListSnapshots(s);
  ASSERT_EQ(list.size(), 2u);
  EXPECT_EQ(list[0].name, "before");
  EXPECT_EQ(list[1].name, "after");
  EXPECT_EQ(CodeOf([&] { DeleteSnapshot(s, "nope"); }), kExitNoInput);
  DeleteSnapshot(s, "before");
  ASSERT_EQ(ListSnapshots(s).size(), 1u);
  EXPECT_EQ(ListSnapshots(s)[0].name, "after");
}

TEST_F(SnapshotTest, RestoringAMissingSnapshotTouchesNothing) {
  Sandbox s("box", Config::Parse("", "config.yaml"));
  Progress p("test");
  EXPECT_EQ(CodeOf([&] { RestoreSnapshot(s, "nope", p, std::chrono::seconds(1)); }), kExitNoInput);
  EXPECT_EQ(last_->machines["box"].state, SandboxState::kRunning);
  EXPECT_EQ(last_->machines["box"].starts, 0);
}

TEST_F(SnapshotTest, ASandboxThatDoesNotExistHasNoSnapshots) {
  machines_.clear();
  Sandbox s("box", Config::Parse("", "config.yaml"));
  EXPECT_EQ(CodeOf([&] { ListSnapshots(s); }), kExitNoInput);
}

TEST(FakeBackendSnapshots, RestoreBringsTheDiskBackAndKeepsTheState) {
  FakeBackend b;
  Progress p("test");
  SandboxSpec spec;
  spec.name = "m";
  b.Create(spec, p);
  b.machines["m"].files["/home/sandbox/a"] = "1";
  b.TakeSnapshot("m", "s");
  EXPECT_THROW(b.TakeSnapshot("m", "s"), Error);
  b.machines["m"].files["/home/sandbox/a"] = "2";
  b.machines["m"].files["/home/sandbox/b"] = "new";
  b.Stop("m", std::chrono::seconds(1));
  b.RestoreSnapshot("m", "s");
  EXPECT_EQ(b.State("m"), SandboxState::kStopped);
  EXPECT_EQ(b.machines["m"].files, (std::map<std::string, std::string>{{"/home/sandbox/a", "1"}}));
  EXPECT_THROW(b.DeleteSnapshot("m", "nope"), Error);
}

}  // namespace
}  // namespace ss
