// The sandbox layer against the in-memory backend: names, the backend recorded at creation,
// resources, machines ss did not make, stop and delete.
#include "sandbox.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>

#include "backend_factory.hpp"
#include "backend_fake.hpp"
#include "deploy.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "size.hpp"
#include "strings.hpp"

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

  // A folder the sandbox's user may write (the projects' owner: uid 1000 when root runs this).
  void MakeDeployDir(const std::string& dir) {
    MakeDirs(dir);
    ASSERT_EQ(::chown(dir.c_str(), ProjectsUid(), static_cast<gid_t>(-1)), 0);
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

int ErrorCode(const std::function<void()>& f, std::string* message = nullptr,
              std::vector<std::string>* hints = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    if (hints) *hints = e.hints();
    return e.code();
  }
  return 0;
}

TEST_F(SandboxTest, TheDeployFolderIsResolvedAndChecked) {
  std::string dir = home_.path() + "/site";
  MakeDirs(dir);
  MakeDeployDir(dir + "/out");
  ASSERT_EQ(::symlink((dir + "/out").c_str(), (home_.path() + "/link").c_str()), 0);
  EXPECT_EQ(ResolveDeployDir(home_.path() + "/link", "--deploy DIR"), dir + "/out");
  EXPECT_EQ(ResolveDeployDir(dir + "/out/", "--deploy DIR"), dir + "/out");
  const char* old_home = std::getenv("HOME");
  std::string saved_home = old_home ? old_home : "";
  ::setenv("HOME", home_.path().c_str(), 1);
  EXPECT_EQ(ResolveDeployDir("~/site/out", "--deploy DIR"), dir + "/out");
  if (old_home) {
    ::setenv("HOME", saved_home.c_str(), 1);
  } else {
    ::unsetenv("HOME");
  }
  char cwd[4096];
  ASSERT_TRUE(::getcwd(cwd, sizeof cwd));
  ASSERT_EQ(::chdir(dir.c_str()), 0);
  EXPECT_EQ(ResolveDeployDir("out", "--deploy DIR"), dir + "/out");
  ASSERT_EQ(::chdir(cwd), 0);

  std::string message;
  std::vector<std::string> hints;
  EXPECT_EQ(ErrorCode([&] { ResolveDeployDir(dir + "/nope", "--deploy DIR"); }, &message, &hints),
            kExitNoInput);
  EXPECT_EQ(message, "deploy folder '" + dir + "/nope' does not exist");
  EXPECT_EQ(hints, std::vector<std::string>{"create it first (mkdir -p " + dir +
                                            "/nope), or name another: --deploy DIR"});
  AtomicWrite(dir + "/file", "x");
  EXPECT_EQ(
      ErrorCode([&] { ResolveDeployDir(dir + "/file", "sandboxes.box.deploy"); }, &message, &hints),
      kExitNoInput);
  EXPECT_EQ(message, "deploy folder '" + dir + "/file' is not a directory");
  EXPECT_EQ(hints, std::vector<std::string>{"name a directory: sandboxes.box.deploy"});
  EXPECT_EQ(ErrorCode([&] { ResolveDeployDir(dir + "/file/x", "--deploy DIR"); }), kExitNoInput);
  // One the sandbox's user cannot write to (whoever runs ss: root writes anywhere, the sandbox
  // does not).
  ASSERT_EQ(::chmod((dir + "/out").c_str(), 0555), 0);
  EXPECT_EQ(ErrorCode([&] { ResolveDeployDir(dir + "/out", "--deploy DIR"); }, &message, &hints),
            kExitNoPerm);
  EXPECT_EQ(message.rfind("deploy folder '" + dir + "/out' is not writable by ", 0), 0u) << message;
  ASSERT_EQ(hints.size(), 1u);
  EXPECT_NE(hints[0].find(Cat("chown ", ProjectsUid(), " ", dir, "/out")), std::string::npos)
      << hints[0];
}

TEST_F(SandboxTest, AMissingDeployFolderStopsTheCreationBeforeAnythingIsMade) {
  std::string missing = home_.path() + "/gone";
  for (bool from_config : {false, true}) {
    Config c = Config::Parse(
        from_config ? "sandboxes:\n  box:\n    deploy: " + missing + "\n" : std::string(),
        "c.yaml");
    Sandbox s("box", c, "fake");
    if (!from_config) s.set_deploy_dir(missing);
    Progress p("test");
    std::vector<std::string> hints;
    EXPECT_EQ(ErrorCode([&] { s.EnsureRunning(p, std::chrono::seconds(1)); }, nullptr, &hints),
              kExitNoInput);
    ASSERT_EQ(hints.size(), 1u);
    EXPECT_NE(hints[0].find(from_config ? "sandboxes.box.deploy in" : "--deploy DIR"),
              std::string::npos)
        << hints[0];
    EXPECT_FALSE(s.exists());
    EXPECT_FALSE(PathExists(s.Dir()));
    EXPECT_TRUE(last_->machines.empty());
  }
}

TEST_F(SandboxTest, TheDeployFolderIsFixedAtCreation) {
  std::string dir = home_.path() + "/deploy", other = home_.path() + "/other";
  MakeDeployDir(dir);
  MakeDeployDir(other);
  Record("box", "fake");
  AtomicWrite(StateDir() + "/sandboxes/box/sandbox.json",
              "{\"kind\":\"SandboxRecord\",\"version\":1,\"backend\":\"fake\",\"deploy\":\"" + dir +
                  "\"}\n");
  Record("plain", "fake");
  machines_["box"].state = SandboxState::kStopped;
  machines_["plain"].state = SandboxState::kStopped;
  Config c = Config::Parse("", "c.yaml");
  Sandbox s("box", c);
  EXPECT_EQ(s.deploy_dir(), dir);
  s.set_deploy_dir(other);
  Progress p("test");
  std::string message;
  std::vector<std::string> hints;
  EXPECT_EQ(ErrorCode([&] { s.EnsureRunning(p, std::chrono::seconds(1)); }, &message, &hints),
            kExitUsage);
  EXPECT_EQ(message, "sandbox 'box' was created with the deploy folder " + dir);
  EXPECT_EQ(hints, std::vector<std::string>{"the deploy folder is chosen when a sandbox is "
                                            "created; to change it: ss vm reset --sandbox box "
                                            "--deploy DIR"});
  EXPECT_EQ(last_->machines["box"].starts, 0);
  Sandbox plain("plain", c);
  EXPECT_EQ(plain.deploy_dir(), "");
  plain.set_deploy_dir(dir);
  EXPECT_EQ(ErrorCode([&] { plain.EnsureRunning(p, std::chrono::seconds(1)); }, &message),
            kExitUsage);
  EXPECT_EQ(message, "sandbox 'plain' was created without a deploy folder");
}

TEST_F(SandboxTest, ResetKeepsTheOldSandboxWhenItsDeployFolderIsGone) {
  std::string gone = home_.path() + "/gone";
  Record("box", "fake");
  AtomicWrite(StateDir() + "/sandboxes/box/sandbox.json",
              "{\"kind\":\"SandboxRecord\",\"version\":1,\"backend\":\"fake\",\"deploy\":\"" +
                  gone + "\"}\n");
  machines_["box"].state = SandboxState::kStopped;
  Sandbox s("box", Config::Parse("", "c.yaml"));
  Progress p("test");
  std::vector<std::string> hints;
  EXPECT_EQ(ErrorCode([&] { s.Reset(p, std::chrono::seconds(1)); }, nullptr, &hints), kExitNoInput);
  EXPECT_EQ(hints, std::vector<std::string>{"create it first (mkdir -p " + gone +
                                            "), or name another: ss vm reset --sandbox box "
                                            "--deploy DIR"});
  EXPECT_TRUE(s.exists());
  EXPECT_EQ(last_->machines.count("box"), 1u);
}

TEST(CouldNotConnect, PointsAtTheConsoleWhenTheBackendKeepsOne) {
  // The spec's block as it is; a VM's console comes last among the things to try, quoted.
  Error plain = CouldNotConnect("no sshd answered on 127.0.0.1:40000");
  EXPECT_EQ(plain.details(),
            (std::vector<std::string>{"", "The VM is running but SSH is not responding.",
                                      "(no sshd answered on 127.0.0.1:40000)", "",
                                      "Try:", "  ss reset          # Reset VM",
                                      "  ss status         # Check VM status"}));
  Error vm = CouldNotConnect("", "/home/a b/.ss/qemu/dev/console.log");
  EXPECT_EQ(vm.details().back(),
            "  less '/home/a b/.ss/qemu/dev/console.log'   # Where its boot stopped");
  EXPECT_EQ(vm.code(), kExitUnavailable);
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
