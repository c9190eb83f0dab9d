#include "config.hpp"

#include <gtest/gtest.h>

#include "config_edit.hpp"
#include "fs.hpp"
#include "host.hpp"
#include "size.hpp"

namespace ss {
namespace {

std::string ParseError(const std::string& text) {
  try {
    Config::Parse(text, "c.yaml");
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitConfig);
    return e.what();
  }
  return "no error";
}

TEST(Config, DefaultsWhenEmpty) {
  Config c = Config::Parse("", "c.yaml");
  EXPECT_EQ(c.Int("version"), 1);
  EXPECT_EQ(c.Int("vm.cpus"), std::min(4, std::max(2, HostCpus())));
  EXPECT_EQ(c.Get("vm.disk").get<int64_t>(), 100 * kGiB);
  EXPECT_TRUE(c.Bool("updates.check"));
  EXPECT_EQ(c.String("backend"), "auto");
  EXPECT_EQ(c.List("sync.exclude"),
            (std::vector<std::string>{"node_modules", ".git", "dist", "build"}));
}

TEST(Config, ReadsTheSpecFile) {
  Config c = Config::Parse(
      "version: 1\nvm:\n  cpus: 2\n  memory: 4GB\n  disk: 100GB\nupdates:\n  check: false\n"
      "  auto_apply: true\n",
      "c.yaml");
  EXPECT_EQ(c.Int("vm.cpus"), 2);
  EXPECT_EQ(c.Get("memory").get<int64_t>(), 4 * kGiB);
  EXPECT_FALSE(c.Bool("updates.check"));
}

TEST(Config, ErrorsCarryFileLineColumn) {
  EXPECT_EQ(ParseError("vm:\n  cpus: [\n"),
            "c.yaml:3:1: invalid YAML: end of sequence flow not found");
  EXPECT_EQ(ParseError("vm:\n  cpu: 2\n"), "c.yaml:2:3: unknown key 'vm.cpu'");
  EXPECT_EQ(ParseError("vm:\n  cpus: two\n"), "c.yaml:2:9: vm.cpus: 'two' is not a whole number");
  EXPECT_EQ(ParseError("vm:\n  disk: 10GB\n"),
            "c.yaml:2:9: vm.disk: 10GB is out of range; valid: 20GB .. 500GB");
  EXPECT_EQ(ParseError("vm:\n  memory: 8G\n"),
            "c.yaml:2:11: vm.memory: '8G' is not a size such as 8GB, 512MB or 1TB");
  EXPECT_EQ(ParseError("version: 2\n"), "c.yaml:1:10: version: 2 is out of range; valid: 1 .. 1");
  EXPECT_EQ(ParseError("backend: vmware\n"),
            "c.yaml:1:10: backend: 'vmware' is not valid; use one of: auto, qemu, lxd, docker, "
            "podman, lume, lima");
  EXPECT_EQ(ParseError("- a\n"), "c.yaml:1:1: expected a mapping of keys (such as 'vm:')");
  EXPECT_EQ(ParseError("vm: 3\n"), "c.yaml:1:5: vm: expected a section of keys");
  EXPECT_EQ(ParseError("vm:\n  cpus: 2\n  cpus: 2\n"), "c.yaml:3:3: duplicate key 'vm.cpus'");
  EXPECT_EQ(ParseError("updates:\n  check: maybe\n"),
            "c.yaml:2:10: updates.check: 'maybe' is not true or false");
  EXPECT_EQ(ParseError("sync:\n  exclude: x\n"),
            "c.yaml:2:12: sync.exclude: expected a list of strings");
  EXPECT_EQ(ParseError("sandboxes:\n  Bad_Name:\n    cpus: 2\n"),
            "c.yaml:2:3: invalid sandbox name in 'sandboxes.Bad_Name': use lowercase letters, "
            "numbers and hyphens, starting with a letter");
  EXPECT_EQ(ParseError("vm:\n  cpus:\n"),
            "c.yaml:2:3: vm.cpus: a value is required (a whole number)");
}

TEST(Config, QuotedNumbersAreNotNumbers) {
  EXPECT_EQ(ParseError("vm:\n  cpus: \"2\"\n"), "c.yaml:2:9: vm.cpus: '2' is not a whole number");
}

TEST(Config, SandboxValuesFallBack) {
  Config c = Config::Parse(
      "vm:\n  cpus: 2\nsandboxes:\n  work:\n    backend: lxd\n    memory: 4GB\n", "c.yaml");
  EXPECT_EQ(c.SandboxValue("work", "backend"), "lxd");
  EXPECT_EQ(c.SandboxValue("work", "memory").get<int64_t>(), 4 * kGiB);
  EXPECT_EQ(c.SandboxValue("work", "cpus"), 2);
  EXPECT_EQ(c.SandboxValue("other", "backend"), "auto");
  EXPECT_EQ(c.SandboxNames(), std::vector<std::string>{"work"});
}

TEST(Config, ProfilesSitBetweenASandboxAndTheTopLevel) {
  Config c = Config::Parse(
      "agent:\n  command: claude\nsecrets: [A]\nsandboxes:\n  p:\n    memory: 4GB\n"
      "profiles:\n  p:\n    description: x\n    memory: 5GB\n    backend: docker\n"
      "    env: [K=V, HOME]\n    agent:\n      command: claude --model opus\n"
      "    secrets:\n      T: {from: {env: OTHER}}\n    network:\n      mode: none\n",
      "c.yaml");
  EXPECT_EQ(c.ProfileNames(), std::vector<std::string>{"p"});
  EXPECT_EQ(c.SandboxValue("p", "memory").get<int64_t>(), 4 * kGiB);  // sandboxes.p wins
  EXPECT_EQ(c.SandboxValue("p", "backend"), "docker");
  EXPECT_EQ(c.SandboxValue("p", "agent.command"), "claude --model opus");
  EXPECT_EQ(c.SandboxValue("p", "network.mode"), "none");
  EXPECT_EQ(c.SandboxValue("p", "env"), Json::array({"K=V", "HOME"}));
  EXPECT_EQ(c.SandboxValue("p", "secrets"), Json::array({"T"}));
  EXPECT_EQ(c.SecretSources("p"), Json({{"T", {{"env", "OTHER"}}}}));
  EXPECT_EQ(c.SandboxKey("p", "memory"), "sandboxes.p.memory");
  EXPECT_EQ(c.SandboxKey("p", "backend"), "profiles.p.backend");
  EXPECT_EQ(c.SandboxKey("p", "mounts"), "");
  // Another sandbox sees the top level only.
  EXPECT_EQ(c.SandboxValue("q", "agent.command"), "claude");
  EXPECT_EQ(c.SandboxValue("q", "secrets"), Json::array({"A"}));
  EXPECT_TRUE(c.SandboxValue("q", "env").is_null());
  c.Override("sandboxes.p.ephemeral", true);
  EXPECT_EQ(c.SandboxValue("p", "ephemeral"), true);
  EXPECT_NE(ParseError("profiles:\n  P:\n    memory: 5GB\n").find("invalid sandbox name"),
            std::string::npos);
  EXPECT_EQ(ParseError("profiles:\n  p:\n    mounts: [/a]\n"),
            "c.yaml:3:13: profiles.p.mounts: '/a': expected HOST:GUEST or HOST:GUEST:ro");
}

TEST(Config, KeysAndAliases) {
  std::string canonical;
  ASSERT_NE(FindKeySpec("memory", &canonical), nullptr);
  EXPECT_EQ(canonical, "vm.memory");
  ASSERT_NE(FindKeySpec("sandboxes.work.backend", &canonical), nullptr);
  EXPECT_EQ(canonical, "sandboxes.work.backend");
  EXPECT_EQ(FindKeySpec("sandboxes.Work.backend"), nullptr);
  EXPECT_EQ(FindKeySpec("foo"), nullptr);
  Error e = UnknownKeyError("memroy");
  EXPECT_EQ(e.code(), kExitUsage);
  EXPECT_EQ(e.details().back(), "Did you mean 'memory'?");
}

class ConfigEdit : public ::testing::Test {
 protected:
  TempDir dir_;
  std::string path_ = dir_.path() + "/config.yaml";
  std::string Set(const std::string& before, const std::string& key, const std::string& value) {
    AtomicWrite(path_, before);
    SetConfigValue(path_, key, value);
    return ReadFile(path_);
  }
};

TEST_F(ConfigEdit, ReplacesAScalarKeepingComments) {
  EXPECT_EQ(Set("# mine\nvm:\n  cpus: 2   # two\n  memory: \"8GB\" # eight\n", "memory", "16gb"),
            "# mine\nvm:\n  cpus: 2   # two\n  memory: 16GB # eight\n");
}

TEST_F(ConfigEdit, AddsAKeyAsTheLastChildOfItsSection) {
  EXPECT_EQ(Set("vm:\n    cpus: 2\n\n# next\nupdates:\n    check: true\n", "disk", "30GB"),
            "vm:\n    cpus: 2\n    disk: 30GB\n\n# next\nupdates:\n    check: true\n");
}

TEST_F(ConfigEdit, AddsMissingSections) {
  EXPECT_EQ(Set("version: 1\n", "sandboxes.work.backend", "lxd"),
            "version: 1\nsandboxes:\n  work:\n    backend: lxd\n");
  EXPECT_EQ(Set("version: 1\nvm:\n", "cpus", "2"), "version: 1\nvm:\n  cpus: 2\n");
}

TEST_F(ConfigEdit, FlowSectionsAndLists) {
  EXPECT_EQ(Set("updates: {check: true}\n", "updates.auto_apply", "false"),
            "updates: {check: true, auto_apply: false}\n");
  EXPECT_EQ(Set("secrets: [A]\n", "secrets", "A,B"), "secrets: [A, B]\n");
  EXPECT_EQ(Set("secrets:\n  - A\n  - B\nvm:\n  cpus: 2\n", "secrets", "C"),
            "secrets: [C]\nvm:\n  cpus: 2\n");
}

TEST_F(ConfigEdit, StringsThatNeedQuotes) {
  EXPECT_EQ(Set("", "agent.command", "claude --x '#y'"),
            "agent:\n  command: \"claude --x '#y'\"\n");
  EXPECT_EQ(Set("", "lxd.remote", "true"), "lxd:\n  remote: \"true\"\n");
  EXPECT_EQ(Config::LoadFile(path_).String("lxd.remote"), "true");
}

TEST_F(ConfigEdit, NewFileGetsAHeader) {
  SetConfigValue(path_, "cpus", "2");
  std::string text = ReadFile(path_);
  EXPECT_EQ(text.rfind("# ss configuration", 0), 0u);
  EXPECT_NE(text.find("version: 1\nvm:\n  cpus: 2\n"), std::string::npos);
}

TEST_F(ConfigEdit, BadValuesLeaveTheFileAlone) {
  const std::string before = "vm:\n  cpus: 2\n";
  AtomicWrite(path_, before);
  EXPECT_THROW(SetConfigValue(path_, "cpus", "999"), Error);
  EXPECT_THROW(SetConfigValue(path_, "memory", "8G"), Error);
  EXPECT_THROW(SetConfigValue(path_, "nope", "1"), Error);
  EXPECT_EQ(ReadFile(path_), before);
}

TEST_F(ConfigEdit, ABrokenFileIsOnlyFixedNotBuiltOn) {
  AtomicWrite(path_, "vm:\n  disk: 1GB\n");
  EXPECT_THROW(SetConfigValue(path_, "cpus", "2"), Error);
  EXPECT_EQ(ReadFile(path_), "vm:\n  disk: 1GB\n");
  SetConfigValue(path_, "disk", "30GB");
  EXPECT_EQ(ReadFile(path_), "vm:\n  disk: 30GB\n");
}

TEST_F(ConfigEdit, UnsetRemovesASectionAndKeepsTheRest) {
  const std::string head = "# mine\nversion: 1\nprojects:\n  pp:\n    mode: copy  # kept\n";
  AtomicWrite(path_, head + "  qq:\n    mode: copy\nvm:\n  cpus: 2\n");
  UnsetConfigSection(path_, "projects.qq");
  EXPECT_EQ(ReadFile(path_), head + "vm:\n  cpus: 2\n");
  // The last project: the section stays, empty; a key not set: nothing happens.
  UnsetConfigSection(path_, "projects.pp");
  EXPECT_FALSE(Config::LoadFile(path_).IsSet("projects.pp.mode"));
  EXPECT_EQ(Config::LoadFile(path_).Int("vm.cpus"), 2);
  std::string now = ReadFile(path_);
  UnsetConfigSection(path_, "projects.zz");
  EXPECT_EQ(ReadFile(path_), now);
  // Flow style: rewritten, the values kept.
  AtomicWrite(path_, "version: 1\nprojects: {aa: {mode: copy}, bb: {mode: copy}}\n");
  UnsetConfigSection(path_, "projects.aa");
  EXPECT_FALSE(Config::LoadFile(path_).IsSet("projects.aa.mode"));
  EXPECT_EQ(Config::LoadFile(path_).String("projects.bb.mode"), "copy");
}

}  // namespace
}  // namespace ss

namespace ss {
namespace {

TEST(ConfigSecrets, TheMapFormDeclaresInjectedSecretsAndKeepsTheListForm) {
  Config c = Config::Parse(
      "secrets:\n"
      "  ANTHROPIC_API_KEY: {inject: [api.anthropic.com]}\n"
      "  GH_TOKEN:\n"
      "    inject: [api.github.com, uploads.github.com]\n"
      "    from: {command: [pass, show, github]}\n"
      "    headers: [Authorization, X-GitHub-Token]\n"
      "  PLAIN:\n"
      "sandboxes:\n"
      "  work:\n"
      "    secrets: [OTHER]\n"
      "  files:\n"
      "    secrets: {K: {inject: [a.test], from: {file: /run/k}}}\n",
      "c.yaml");
  EXPECT_EQ(c.List("secrets"),
            (std::vector<std::string>{"ANTHROPIC_API_KEY", "GH_TOKEN", "PLAIN"}));
  Json inject = c.SecretInjections("box");
  EXPECT_EQ(inject.size(), 2u);
  EXPECT_EQ(inject["ANTHROPIC_API_KEY"]["from"]["env"], "ANTHROPIC_API_KEY");
  EXPECT_EQ(inject["ANTHROPIC_API_KEY"]["inject"], Json::array({"api.anthropic.com"}));
  EXPECT_EQ(inject["GH_TOKEN"]["from"]["command"], Json::array({"pass", "show", "github"}));
  EXPECT_EQ(inject["GH_TOKEN"]["headers"], Json::array({"Authorization", "X-GitHub-Token"}));
  EXPECT_FALSE(inject["ANTHROPIC_API_KEY"].contains("headers"));
  // A sandbox's own secrets replace the global ones, injections included.
  EXPECT_TRUE(c.SecretInjections("work").empty());
  EXPECT_EQ(c.SecretInjections("files")["K"]["from"]["file"], "/run/k");
  EXPECT_EQ(c.SandboxValue("files", "secrets"), Json::array({"K"}));
}

// from: without inject: the value is read there at each session and passed in.
TEST(ConfigSecrets, SourcesOfSecretsPassedIn) {
  Config c = Config::Parse(
      "secrets:\n"
      "  OP_TOKEN: {from: {command: [op, read, 'op://vault/item/field']}}\n"
      "  FROM_FILE: {from: {file: /run/secrets/x}}\n"
      "  PLAIN:\n"
      "  INJECTED: {inject: [api.example.com], from: {env: OTHER}}\n",
      "c.yaml");
  EXPECT_EQ(c.List("secrets"),
            (std::vector<std::string>{"OP_TOKEN", "FROM_FILE", "PLAIN", "INJECTED"}));
  Json sources = c.SecretSources("box");
  EXPECT_EQ(sources.size(), 2u);
  EXPECT_EQ(sources["OP_TOKEN"]["command"], Json::array({"op", "read", "op://vault/item/field"}));
  EXPECT_EQ(sources["FROM_FILE"]["file"], "/run/secrets/x");
  EXPECT_EQ(c.SecretInjections("box").size(), 1u);
}

TEST(ConfigSecrets, BadInjectionsAreConfigErrorsWithTheirPlace) {
  auto error = [](const std::string& text) {
    try {
      Config::Parse(text, "c.yaml");
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), kExitConfig);
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(error("secrets: {K: {inject: [10.0.0.1]}}\n").find("is not a host name"),
            std::string::npos);
  EXPECT_NE(error("secrets: {K: {inject: []}}\n").find("expected a list of strings"),
            std::string::npos);
  EXPECT_NE(error("secrets: {K: {from: {file: rel}}}\n").find("from: expected env: NAME"),
            std::string::npos);
  EXPECT_NE(error("secrets: {K: {inject: [a.test], from: {file: rel}}}\n").find("from:"),
            std::string::npos);
  EXPECT_NE(error("secrets: {K: {inject: [a.test], via: x}}\n").find("unknown key"),
            std::string::npos);
  EXPECT_NE(error("secrets: {1K: {inject: [a.test]}}\n").find("not an environment variable"),
            std::string::npos);
  EXPECT_NE(error("secrets: {K: {inject: ['a.test,IP:1']}}\n").find("is not a host name"),
            std::string::npos);
  EXPECT_NE(error("secrets: {K: {inject: [a.test], headers: ['X: y']}}\n")
                .find("secrets.K.headers: 'X: y' is not a header name"),
            std::string::npos);
  EXPECT_NE(error("secrets: {K: {headers: [x-api-key]}}\n").find("only for a secret with inject:"),
            std::string::npos);
}

}  // namespace
}  // namespace ss
