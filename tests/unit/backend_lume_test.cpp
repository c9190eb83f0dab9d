// The Lume backend's own parts: how Lume names the shares in the machine, the sizes it is sent,
// and the first boot's script. The backend against Lume's API, end to end, is tests/e2e (with
// the stand-in Lume server).
#include "backend_lume.hpp"

#include <gtest/gtest.h>

#include <algorithm>

#include "process.hpp"
#include "provision.hpp"
#include "provision_input.hpp"
#include "shell_quote.hpp"
#include "size.hpp"
#include "strings.hpp"

namespace ss {
namespace {

TEST(LumeShares, EachIsAFolderNamedAfterItsBasenameTheSecondOfANameNumbered) {
  EXPECT_EQ(LumeShareFolders({{"/u/me/projects", false},
                              {"/u/me/data", true},
                              {"/other/projects", false},
                              {"/x/projects/", false}}),
            (std::vector<std::string>{"projects", "data", "projects (2)", "projects (3)"}));
  EXPECT_TRUE(LumeShareFolders({}).empty());
}

TEST(LumeSizes, AreWholeMegabytesRoundedUp) {
  EXPECT_EQ(LumeSize(8 * kGiB), "8192MB");
  EXPECT_EQ(LumeSize(kMiB + 1), "2MB");
  EXPECT_EQ(LumeSize(100 * kGiB), "102400MB");
}

TEST(LumeFirstBoot, IsAScriptThatParsesAndMountsEveryShareOnEveryBoot) {
  SandboxSpec spec;
  spec.name = "box";
  spec.user_data = RenderUserData(TestProvisionInput());
  spec.mounts = {{"projects", "/u/me/projects", "/home/sandbox/projects", false},
                 {"mount-1", "/u/me/projects", "/data dir", true}};
  ImageBuildOptions mine;
  mine.npm = {"@scope/tool@1"};
  spec.tools = ImageToolsFor(mine);
  std::string s = LumeFirstBoot(spec, {"projects", "projects (2)"});
  ASSERT_EQ(s.rfind("#!/bin/sh\n", 0), 0u);
  ProcessOptions o;
  o.input = s;
  EXPECT_TRUE(ss::Run({"sh", "-n"}, o).ok()) << s;
  // The image's user becomes the sandbox user with a locked password and passwordless sudo.
  EXPECT_NE(s.find("$1 = \"sandbox\"; $2 = \"!\""), std::string::npos);
  EXPECT_NE(s.find("sandbox ALL=(ALL) NOPASSWD:ALL"), std::string::npos);
  // The pinned host key and sshd without passwords, then the shares, then the provisioning.
  size_t key = s.find("ssh_host_ed25519_key");
  size_t fstab = s.find("/etc/fstab");
  size_t marker = s.find("/var/lib/ss/provisioned");
  ASSERT_NE(key, std::string::npos);
  EXPECT_NE(s.find("PasswordAuthentication no"), std::string::npos);
  EXPECT_LT(key, fstab);
  EXPECT_LT(fstab, marker);
  // ss's tools (the script beside this one, reading no stdin), before the provisioning's
  // commands, which may use them.
  size_t tools = s.find(Cat(" sh \"${0%/*}/", kLumeInstallTools, "\" </dev/null\n"));
  ASSERT_NE(tools, std::string::npos);
  EXPECT_LT(fstab, tools);
  EXPECT_LT(tools, marker);
  EXPECT_NE(s.find("SS_NODE_MAJOR=22 SS_NPM_MAJOR=10 SS_NPM='@anthropic-ai/claude-code "
                   "chrome-devtools-mcp vercel@60 @scope/tool@1' SS_REGISTRY="),
            std::string::npos);
  EXPECT_NE(s.find("com.apple.virtio-fs.automount /mnt/lume virtiofs rw,nofail 0 0 # ss-share"),
            std::string::npos);
  EXPECT_NE(s.find("/mnt/lume/projects /home/sandbox/projects none bind,nofail 0 0 # ss-share"),
            std::string::npos);
  // fstab's escapes for the spaces of a folder and a target; read-only stays read-only.
  EXPECT_NE(s.find(ShellQuote(
                "/mnt/lume/projects\\040(2) /data\\040dir none bind,nofail,ro 0 0 # ss-share")),
            std::string::npos);
}

TEST(ImageTools, AreTheImagesPackagesButItsKernelAndBootWithTheUsersOwn) {
  ImageBuildOptions mine;
  mine.packages = {"cowsay"};
  mine.npm = {"typescript@5"};
  ImageTools t = ImageToolsFor(mine);
  auto has = [](const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
  };
  for (const char* p : {"git", "gh", "docker.io", "tree", "cowsay"})
    EXPECT_TRUE(has(t.packages, p));
  for (const char* p : {"linux-image-amd64", "initramfs-tools", "cloud-init", "systemd-resolved"}) {
    EXPECT_FALSE(has(t.packages, p)) << p;
  }
  EXPECT_EQ(t.npm, (std::vector<std::string>{"@anthropic-ai/claude-code", "chrome-devtools-mcp",
                                             "vercel@60", "typescript@5"}));
  EXPECT_EQ(t.node_major, 22);
  EXPECT_EQ(t.npm_major, 10);
  EXPECT_FALSE(t.registry.empty());
}

}  // namespace
}  // namespace ss
