#include "provision.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "error.hpp"
#include "json_out.hpp"
#include "provision_input.hpp"
#include "resources.hpp"
#include "working_copy.hpp"

namespace ss {
namespace {

ProvisionInput Input() { return TestProvisionInput(); }

TEST(Provision, UserDataIsCloudConfigWithTheKeys) {
  std::string text = RenderUserData(Input());
  ASSERT_EQ(text.rfind("#cloud-config\n", 0), 0u);
  YAML::Node doc = YAML::Load(text);
  EXPECT_EQ(doc["hostname"].as<std::string>(), "box");
  EXPECT_EQ(doc["ssh_authorized_keys"][0].as<std::string>(), "ssh-ed25519 AAAAclient ss");
  EXPECT_EQ(doc["ssh_keys"]["ed25519_private"].as<std::string>(), Input().host_private_key);
  EXPECT_EQ(doc["ssh_keys"]["ed25519_public"].as<std::string>(), "ssh-ed25519 AAAAhost ss-box");
  bool marker = false;
  for (const auto& cmd : doc["runcmd"]) {
    marker = marker || cmd[cmd.size() - 1].as<std::string>() == "/var/lib/ss/provisioned";
  }
  EXPECT_TRUE(marker);
  // The agent's settings: Chrome DevTools at the configured port, in a file only its user reads.
  Json settings;
  for (const auto& f : doc["write_files"]) {
    if (f["path"].as<std::string>() != "/home/sandbox/.claude.json") continue;
    EXPECT_EQ(f["owner"].as<std::string>(), "sandbox:sandbox");
    EXPECT_EQ(f["permissions"].as<std::string>(), "0600");
    settings = Json::parse(f["content"].as<std::string>());
  }
  EXPECT_EQ(settings["mcpServers"]["chrome-devtools"]["command"], "chrome-devtools-mcp");
  EXPECT_EQ(settings["mcpServers"]["chrome-devtools"]["args"],
            Json({"--browserUrl", "http://127.0.0.1:9333"}));
}

TEST(Provision, TheMotdIsTheSpecsBoxWithItsMargin) {
  YAML::Node doc = YAML::Load(RenderUserData(Input()));
  std::string motd;
  for (const auto& f : doc["write_files"]) {
    if (f["path"].as<std::string>() == "/etc/motd") motd = f["content"].as<std::string>();
  }
  EXPECT_NE(motd.find("\n  ╭───"), std::string::npos) << motd;
  EXPECT_NE(motd.find("  │   Super-Sandbox"), std::string::npos);
  EXPECT_NE(motd.find("  │   Your projects are in ~/projects"), std::string::npos);
}

TEST(Provision, ExtraSectionsAndMetaData) {
  ProvisionInput in = Input();
  in.extra = "bootcmd:\n  - [mkdir, -p, /x]\n";
  YAML::Node doc = YAML::Load(RenderUserData(in));
  EXPECT_EQ(doc["bootcmd"][0][2].as<std::string>(), "/x");
  YAML::Node meta = YAML::Load(RenderMetaData(in));
  EXPECT_EQ(meta["instance-id"].as<std::string>(), "box-1");
  EXPECT_EQ(meta["local-hostname"].as<std::string>(), "box");
}

std::string FileContent(const YAML::Node& doc, const std::string& path) {
  for (const auto& f : doc["write_files"]) {
    if (f["path"].as<std::string>() == path) return f["content"].as<std::string>();
  }
  return "<missing>";
}

TEST(Provision, TheShellConfigIsInstalledWordForWordWithTheExclusionList) {
  ProvisionInput in = Input();
  in.sync_exclude = RenderSyncExclude({"node_modules", ".git", "dist", "build"});
  YAML::Node doc = YAML::Load(RenderUserData(in));
  EXPECT_EQ(FileContent(doc, "/usr/local/share/ss/shell/ss.bash"),
            RequireResource("shell/ss.bash"));
  EXPECT_EQ(FileContent(doc, "/usr/local/share/ss/shell/ss.fish"),
            RequireResource("shell/ss.fish"));
  EXPECT_EQ(FileContent(doc, "/usr/local/lib/ss/install-shell"), RequireResource("shell/install"));
  EXPECT_EQ(FileContent(doc, "/usr/local/lib/ss/sync-tree"), RequireResource("shell/sync-tree"));
  EXPECT_EQ(FileContent(doc, "/etc/ss/sync-exclude"), in.sync_exclude);
  bool installs = false;
  for (const auto& cmd : doc["runcmd"]) {
    if (cmd[0].as<std::string>() == "/usr/local/lib/ss/install-shell") {
      installs = cmd[1].as<std::string>() == "sandbox" && cmd[2].as<std::string>() == "bash";
    }
  }
  EXPECT_TRUE(installs);
}

TEST(Provision, FishIsTheLoginShellWhenAsked) {
  ProvisionInput in = Input();
  in.shell = "fish";
  YAML::Node doc = YAML::Load(RenderUserData(in));
  bool fish = false;
  for (const auto& cmd : doc["runcmd"]) {
    if (cmd[0].as<std::string>() == "/usr/local/lib/ss/install-shell")
      fish = cmd[2].as<std::string>() == "fish";
  }
  EXPECT_TRUE(fish);
  in.shell = "zsh";
  EXPECT_THROW(RenderUserData(in), Error);
}

}  // namespace
}  // namespace ss
