// A sandbox's policy in force: config.yaml's network (the sandbox's keys, else the top level's)
// with the changes of `ss net` laid on top, the latest word on a rule counting.
#include "net_store.hpp"

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

#include "error.hpp"
#include "fs.hpp"
#include "paths.hpp"

namespace ss {
namespace {

class NetStoreTest : public ::testing::Test {
 protected:
  void SetUp() override { ::setenv("SS_HOME", home_.path().c_str(), 1); }
  void TearDown() override { ::unsetenv("SS_HOME"); }
  void Config(const std::string& yaml) { AtomicWrite(ConfigPath(), yaml); }

  static std::vector<std::string> Texts(const std::vector<NetRule>& rules) {
    std::vector<std::string> out;
    for (const auto& r : rules) out.push_back(r.text);
    return out;
  }

  TempDir home_;
};

TEST_F(NetStoreTest, WithoutConfigTheDefaultPresetsAllowlist) {
  NetPolicy p = LoadNetPolicy("work");
  EXPECT_EQ(p.mode, NetMode::kAllowlist);
  for (const char* want : {"api.anthropic.com", "api.github.com", "registry.npmjs.org"}) {
    EXPECT_TRUE(Decide(p, want, 443).allowed) << want;
  }
  EXPECT_TRUE(Decide(p, "deb.debian.org", 80).allowed);
  EXPECT_FALSE(Decide(p, "pastebin.com", 443).allowed);
  EXPECT_TRUE(p.deny.empty());
}

TEST_F(NetStoreTest, SandboxKeysOverrideTheTopLevelKeyByKey) {
  Config(
      "network:\n  mode: allowlist\n  presets: [github]\n  allow: [pypi.org]\n  deny: "
      "[gist.github.com]\n"
      "sandboxes:\n  work:\n    network:\n      presets: []\n      allow: [example.com]\n");
  NetPolicy work = LoadNetPolicy("work");
  EXPECT_EQ(Texts(work.allow), std::vector<std::string>{"example.com"});
  EXPECT_EQ(Texts(work.deny), std::vector<std::string>{"gist.github.com"});  // the top level's
  NetPolicy other = LoadNetPolicy("other");
  EXPECT_TRUE(Decide(other, "api.github.com", 443).allowed);
  EXPECT_FALSE(Decide(other, "gist.github.com", 443).allowed);
  EXPECT_TRUE(Decide(other, "pypi.org", 443).allowed);
  EXPECT_FALSE(Decide(other, "api.anthropic.com", 443).allowed);
}

TEST_F(NetStoreTest, ChangesLieOnTopAndTheLatestWordOnARuleCounts) {
  Config("network:\n  presets: []\n  allow: [a.test]\n");
  ChangeNetPolicy("work", "allow", {"b.test", "A.TEST."});
  ChangeNetPolicy("work", "deny", {"a.test"});
  ChangeNetPolicy("work", "mode", {"open"});
  ChangeNetPolicy("work", "allow", {"a.test"});
  NetPolicy p = LoadNetPolicy("work");
  EXPECT_EQ(p.mode, NetMode::kOpen);
  EXPECT_EQ(Texts(p.allow), (std::vector<std::string>{"a.test", "b.test"}));
  EXPECT_TRUE(p.deny.empty());
  // Written for ss-net, and kept when config.yaml changes underneath.
  EXPECT_EQ(ReadFileIfExists(NetPolicyPath("work")), NetPolicyToJson(p));
  Config("network:\n  presets: []\n  allow: [c.test]\n  mode: none\n");
  EXPECT_TRUE(WriteNetPolicy("work"));
  EXPECT_FALSE(WriteNetPolicy("work"));  // nothing new
  p = LoadNetPolicy("work");
  EXPECT_EQ(p.mode, NetMode::kOpen);
  EXPECT_EQ(Texts(p.allow), (std::vector<std::string>{"c.test", "b.test", "a.test"}));
}

TEST_F(NetStoreTest, ABadChangeIsRefusedBeforeAnythingIsWritten) {
  EXPECT_THROW(ChangeNetPolicy("work", "allow", {"ok.test", "*bad"}), Error);
  EXPECT_FALSE(PathExists(NetChangesPath("work")));
  MakeDirs(SandboxNetDir("work"));
  AtomicWrite(NetChangesPath("work"), "{\"not\": \"a list\"}");
  try {
    LoadNetPolicy("work");
    FAIL() << "a damaged changes file must not pass for none";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitDataErr);
  }
}

}  // namespace
}  // namespace ss
