// The Lume backend's own parts: how Lume names the shares in the machine, the sizes it is sent,
// and the first boot's script. The backend against Lume's API, end to end, is tests/e2e (with
// the stand-in Lume server).
#include "backend_lume.hpp"

#include <gtest/gtest.h>

#include "process.hpp"
#include "provision.hpp"
#include "provision_input.hpp"
#include "shell_quote.hpp"
#include "size.hpp"

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
  EXPECT_NE(s.find("com.apple.virtio-fs.automount /mnt/lume virtiofs rw,nofail 0 0 # ss-share"),
            std::string::npos);
  EXPECT_NE(s.find("/mnt/lume/projects /home/sandbox/projects none bind,nofail 0 0 # ss-share"),
            std::string::npos);
  // fstab's escapes for the spaces of a folder and a target; read-only stays read-only.
  EXPECT_NE(s.find(ShellQuote(
                "/mnt/lume/projects\\040(2) /data\\040dir none bind,nofail,ro 0 0 # ss-share")),
            std::string::npos);
}

}  // namespace
}  // namespace ss
