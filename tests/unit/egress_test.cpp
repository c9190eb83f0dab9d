// Where a relay finds a sandbox's ss-net (egress.hpp): the record of a running ss-net on loopback,
// read afresh each time; nothing when ss-net is gone or listens elsewhere.
#include "egress.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <nlohmann/json.hpp>
#include <thread>

#include "fs.hpp"
#include "net_store.hpp"
#include "strings.hpp"

namespace ss {
namespace {

class EgressTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("SS_HOME", home_.path().c_str(), 1); }
  void TearDown() override {
    if (child_ > 0) {
      ::kill(child_, SIGKILL);
      ::waitpid(child_, nullptr, 0);
    }
    ::unsetenv("SS_HOME");
  }

  // A process that passes for the sandbox's ss-net (RunningPid checks its argv).
  pid_t FakeServer(const std::string& sandbox) {
    std::string dir = home_.path() + "/bin";
    MakeDirs(dir);
    std::string link = dir + "/ss-net";
    if (::symlink("/bin/sh", link.c_str()) != 0 && errno != EEXIST) return -1;
    child_ = ::fork();
    if (child_ == 0) {
      ::execl(link.c_str(), "ss-net", "-c", "while :; do sleep 1; done", "--sandbox",
              sandbox.c_str(), nullptr);
      ::_exit(127);
    }
    // Once it runs as ss-net (until then its command line is this test's).
    for (int i = 0; i < 200; ++i) {
      auto cmdline = ReadFileIfExists(Cat("/proc/", child_, "/cmdline"));
      if (cmdline && cmdline->starts_with("ss-net")) break;
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    return child_;
  }

  void Record(const std::string& sandbox, const nlohmann::json& record) {
    MakeDirs(SandboxNetDir(sandbox), 0700);
    AtomicWrite(SandboxNetDir(sandbox) + "/serve.json", record.dump() + "\n", 0600);
  }

  TempDir home_;
  pid_t child_ = -1;
};

nlohmann::json Ready(const std::string& proxy, const std::string& dns) {
  return {{"kind", "NetServer"},
          {"proxy", nlohmann::json::array({proxy})},
          {"transparent", nlohmann::json::array()},
          {"dns", nlohmann::json::array({dns})}};
}

TEST_F(EgressTest, ARunningSsNetOnLoopbackGivesItsPorts) {
  pid_t pid = FakeServer("box");
  ASSERT_GT(pid, 0);
  Record("box",
         {{"pid", pid}, {"interface", ""}, {"ready", Ready("127.0.0.1:41000", "127.0.0.1:41001")}});
  EXPECT_EQ(EgressLoopbackPort("box", EgressService::kProxy), 41000);
  EXPECT_EQ(EgressLoopbackPort("box", EgressService::kDns), 41001);
  // Started again on other ports: the next connection goes there.
  Record("box",
         {{"pid", pid}, {"interface", ""}, {"ready", Ready("127.0.0.1:42000", "127.0.0.1:42001")}});
  EXPECT_EQ(EgressLoopbackPort("box", EgressService::kProxy), 42000);
  EgressState state = GetEgressState("box");
  EXPECT_TRUE(state.fenced);
  EXPECT_EQ(state.fence, "backend");
  EXPECT_EQ(state.pid, pid);
}

TEST_F(EgressTest, NothingWhenSsNetIsGone) {
  EXPECT_EQ(EgressLoopbackPort("box", EgressService::kProxy), std::nullopt);  // no record
  pid_t pid = FakeServer("box");
  ASSERT_GT(pid, 0);
  Record("box",
         {{"pid", pid}, {"interface", ""}, {"ready", Ready("127.0.0.1:41000", "127.0.0.1:41001")}});
  ::kill(pid, SIGKILL);
  ::waitpid(pid, nullptr, 0);
  child_ = -1;
  EXPECT_EQ(EgressLoopbackPort("box", EgressService::kProxy), std::nullopt);
  EXPECT_EQ(EgressLoopbackPort("box", EgressService::kDns), std::nullopt);
  // Still fenced (by the backend): nothing gets out until ss starts it again.
  EgressState state = GetEgressState("box");
  EXPECT_TRUE(state.fenced);
  EXPECT_EQ(state.pid, 0);
  EXPECT_TRUE(EgressServerGone("box"));
}

TEST_F(EgressTest, NothingForAnotherSandboxsProcessOrAnSsNetOffLoopback) {
  pid_t pid = FakeServer("other");
  ASSERT_GT(pid, 0);
  Record("box",
         {{"pid", pid}, {"interface", ""}, {"ready", Ready("127.0.0.1:41000", "127.0.0.1:41001")}});
  EXPECT_EQ(EgressLoopbackPort("box", EgressService::kProxy), std::nullopt);
  // An ss-net behind an nftables fence listens on the bridge, not for relays.
  Record("other", {{"pid", pid}, {"ready", Ready("10.9.0.1:3128", "10.9.0.1:53")}});
  EXPECT_EQ(EgressLoopbackPort("other", EgressService::kProxy), std::nullopt);
  Record("other", {{"pid", pid}, {"interface", ""}, {"ready", Ready("10.9.0.1:3128", "x")}});
  EXPECT_EQ(EgressLoopbackPort("other", EgressService::kProxy), std::nullopt);
  EXPECT_EQ(EgressLoopbackPort("other", EgressService::kDns), std::nullopt);
}

TEST_F(EgressTest, NeverFencedMeansNotFencedWithoutAskingNft) {
  EgressState state = GetEgressState("box");
  EXPECT_FALSE(state.fenced);
  EXPECT_EQ(state.fence, "");
  EXPECT_EQ(state.pid, 0);
}

}  // namespace
}  // namespace ss
