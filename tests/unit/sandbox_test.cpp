// The sandbox layer against the in-memory backend: names, the backend recorded at creation,
// resources, machines ss did not make, stop and delete.
#include "sandbox.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include "backend_fake.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "size.hpp"

namespace ss {
namespace {

class SandboxTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ::setenv("SS_HOME", home_.path().c_str(), 1);
    ::unsetenv("SS_SANDBOX");
    ::unsetenv("CLAUDE_SANDBOX");
    RegisterBackend("fake", [this](const Config&) {
      // Every Sandbox starts from the machines the test set up.
      auto b = std::make_unique<FakeBackend>();
      b->machines = machines_;
      last_ = b.get();
      return b;
    });
  }
  void TearDown() override { ::unsetenv("SS_HOME"); }

  void Record(const std::string& name, const std::string& backend) {
    MakeDirs(StateDir() + "/sandboxes/" + name);
    AtomicWrite(StateDir() + "/sandboxes/" + name + "/sandbox.json",
                "{\"kind\":\"SandboxRecord\",\"version\":1,\"backend\":\"" + backend + "\"}\n");
  }

  TempDir home_;
  std::map<std::string, FakeBackend::Machine> machines_;
  FakeBackend* last_ = nullptr;
};

TEST_F(SandboxTest, NamePrecedence) {
  EXPECT_EQ(ResolveSandboxName(""), "super-sandbox");
  ::setenv("CLAUDE_SANDBOX", "from-lxd-tool", 1);
  EXPECT_EQ(ResolveSandboxName(""), "from-lxd-tool");
  ::setenv("SS_SANDBOX", "from-ss", 1);
  EXPECT_EQ(ResolveSandboxName(""), "from-ss");
  EXPECT_EQ(ResolveSandboxName("flag"), "flag");
  try {
    ResolveSandboxName("Bad_Name");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitDataErr);
  }
}

TEST_F(SandboxTest, ANewSandboxTakesTheBackendItIsGiven) {
  Sandbox s("box", Config::Parse("", "c.yaml"), "fake");
  EXPECT_EQ(s.backend_name(), "fake");
  EXPECT_FALSE(s.exists());
  EXPECT_EQ(s.State(), SandboxState::kNotExists);
}

TEST_F(SandboxTest, TheRecordedBackendWinsAndIsNeverSwitchedSilently) {
  Record("box", "fake");
  Sandbox s("box", Config::Parse("backend: lxd\n", "c.yaml"));
  EXPECT_EQ(s.backend_name(), "fake");
  try {
    Sandbox other("box", Config::Parse("", "c.yaml"), "lxd");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitUsage);
    EXPECT_EQ(std::string(e.what()), "sandbox 'box' runs on fake, not lxd");
  }
}

TEST_F(SandboxTest, AMachineWithoutARecordIsNotOurs) {
  machines_["box"].state = SandboxState::kRunning;
  Sandbox s("box", Config::Parse("", "c.yaml"), "fake");
  EXPECT_EQ(s.State(), SandboxState::kBroken);
  Progress p("test");
  try {
    s.EnsureRunning(p, std::chrono::seconds(1));
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitCantCreate);
  }
}

TEST_F(SandboxTest, ResourcesPerSandboxOverTheDefaults) {
  Config c = Config::Parse(
      "vm:\n  memory: 6GB\nsandboxes:\n  box:\n    memory: 5GB\n    disk: 30GB\n", "c.yaml");
  Sandbox s("box", c, "fake");
  EXPECT_EQ(s.DesiredResources().memory, 5 * kGiB);
  EXPECT_EQ(s.DesiredResources().disk, 30 * kGiB);
  Sandbox other("other", c, "fake");
  EXPECT_EQ(other.DesiredResources().memory, 6 * kGiB);
}

TEST_F(SandboxTest, StopAndDelete) {
  Record("box", "fake");
  machines_["box"].state = SandboxState::kRunning;
  Sandbox s("box", Config::Parse("", "c.yaml"));
  s.Stop(std::chrono::seconds(1));
  EXPECT_EQ(last_->machines["box"].state, SandboxState::kStopped);
  s.Stop(std::chrono::seconds(1));  // already stopped: nothing to do
  s.Delete();
  EXPECT_FALSE(s.exists());
  EXPECT_EQ(last_->machines.count("box"), 0u);
  EXPECT_EQ(KnownSandboxes(), std::vector<std::string>{});
}

TEST_F(SandboxTest, KnownSandboxesAreTheRecordedOnes) {
  Record("b", "fake");
  Record("a", "fake");
  MakeDirs(StateDir() + "/sandboxes/not-a-record");
  EXPECT_EQ(KnownSandboxes(), (std::vector<std::string>{"a", "b"}));
}

TEST(FakeBackend, Lifecycle) {
  FakeBackend b;
  Progress p("test");
  SandboxSpec spec;
  spec.name = "m";
  spec.resources.cpus = 2;
  b.Create(spec, p);
  EXPECT_EQ(b.State("m"), SandboxState::kRunning);
  EXPECT_THROW(b.Create(spec, p), Error);
  b.Stop("m", std::chrono::seconds(1));
  EXPECT_EQ(b.State("m"), SandboxState::kStopped);
  b.Start("m", Resources{4, 0, 0});
  EXPECT_EQ(b.Status("m").limits.cpus, 4);
  b.TakeSnapshot("m", "s1");
  EXPECT_EQ(b.Snapshots("m").size(), 1u);
  b.RestoreSnapshot("m", "s1");
  EXPECT_THROW(b.RestoreSnapshot("m", "nope"), Error);
  b.DeleteSnapshot("m", "s1");
  EXPECT_TRUE(b.Snapshots("m").empty());
  b.Delete("m");
  EXPECT_EQ(b.State("m"), SandboxState::kNotExists);
}

}  // namespace
}  // namespace ss
