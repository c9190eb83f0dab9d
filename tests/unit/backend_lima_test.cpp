// The Lima backend's own parts: the template ss hands to limactl, the provisioning scripts made
// from the #cloud-config, and what it reads back from limactl. The backend against limactl's
// contract, end to end, is tests/e2e (with the fake limactl).
#include "backend_lima.hpp"

#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include "error.hpp"
#include "fs.hpp"
#include "image.hpp"
#include "process.hpp"
#include "provision_input.hpp"
#include "provision_script.hpp"
#include "strings.hpp"

namespace ss {
namespace {

ProvisionInput Input() { return TestProvisionInput(); }

ProcessResult Sh(const std::string& script) { return ss::Run({"sh", "-c", script, "sh"}); }

TEST(LimaProvision, TheSandboxesCloudConfigBecomesTwoScriptsThatParse) {
  ProvisionScripts s = CloudConfigToScripts(RenderUserData(Input()));
  for (const std::string* script : {&s.boot, &s.system}) {
    ASSERT_EQ(script->rfind("#!/bin/sh\n", 0), 0u);
    ProcessOptions o;
    o.input = *script;
    EXPECT_TRUE(ss::Run({"sh", "-n"}, o).ok()) << *script;
  }
  // The boot script: the pinned host key and the install's key for the sandbox user only.
  EXPECT_NE(s.boot.find(Input().host_private_key), std::string::npos);
  EXPECT_NE(s.boot.find("ssh-ed25519 AAAAclient ss\n"), std::string::npos);
  EXPECT_NE(s.boot.find("authorized_keys.%u"), std::string::npos);
  EXPECT_NE(s.boot.find("PasswordAuthentication no"), std::string::npos);
  // The system script: every file and command of the template, the marker last.
  EXPECT_NE(s.system.find("hostname box\n"), std::string::npos);
  EXPECT_NE(s.system.find("cat > /home/sandbox/.claude.json"), std::string::npos);
  EXPECT_NE(s.system.find("chown sandbox:sandbox /home/sandbox/.claude.json"), std::string::npos);
  EXPECT_LT(s.system.find("install-shell sandbox bash"), s.system.find("/var/lib/ss/provisioned"));
}

// The files come out byte for byte, whatever they hold, and the commands run as argv.
TEST(LimaProvision, TheSystemScriptWritesFilesExactlyAndRunsTheCommands) {
  TempDir tmp;
  std::string hostile = "a $HOME `x` 'q' \\\nSS_END\n\"SS_END_\"\nno newline at the end";
  YAML::Emitter y;
  y << YAML::BeginMap << YAML::Key << "ssh_authorized_keys" << YAML::Value << YAML::BeginSeq
    << Input().client_public_key << YAML::EndSeq;
  y << YAML::Key << "ssh_keys" << YAML::Value << YAML::BeginMap;
  y << YAML::Key << "ed25519_private" << YAML::Value << YAML::Literal << Input().host_private_key;
  y << YAML::Key << "ed25519_public" << YAML::Value << Input().host_public_key << YAML::EndMap;
  y << YAML::Key << "write_files" << YAML::Value << YAML::BeginSeq;
  for (const auto& [name, content] :
       {std::pair<std::string, std::string>{"one", hostile}, {"two words", "line\n"}}) {
    y << YAML::BeginMap << YAML::Key << "path" << YAML::Value << Cat(tmp.path(), "/d/", name);
    y << YAML::Key << "permissions" << YAML::Value << "0640";
    y << YAML::Key << "owner" << YAML::Value << Cat(::getuid(), ":", ::getgid());
    y << YAML::Key << "content" << YAML::Value << YAML::DoubleQuoted << content << YAML::EndMap;
  }
  y << YAML::EndSeq << YAML::Key << "runcmd" << YAML::Value << YAML::BeginSeq;
  y << YAML::Flow << YAML::BeginSeq << "touch" << Cat(tmp.path(), "/ran; echo $HOME")
    << YAML::EndSeq;
  y << YAML::EndSeq << YAML::EndMap;
  std::string system = CloudConfigToScripts(y.c_str()).system;
  ProcessResult r = Sh(system);
  ASSERT_TRUE(r.ok()) << r.err << system;
  EXPECT_EQ(ReadFile(tmp.path() + "/d/one"), hostile);
  EXPECT_EQ(ReadFile(tmp.path() + "/d/two words"), "line\n");
  EXPECT_TRUE(PathExists(tmp.path() + "/ran; echo $HOME"));
}

TEST(LimaProvision, AKeyItDoesNotKnowIsRefusedNotDropped) {
  try {
    CloudConfigToScripts("#cloud-config\npackages: [curl]\n");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitSoftware);
    EXPECT_NE(std::string(e.what()).find("'packages'"), std::string::npos) << e.what();
  }
}

TEST(LimaTemplate, NamesTheImageTheSharesThePortAndTheProvisioning) {
  TempDir image;
  for (const char* f : {"base.qcow2", "vmlinuz", "initrd.img"}) {
    AtomicWrite(Cat(image.path(), "/", f), "", 0644);
  }
  SandboxSpec spec;
  spec.name = "box";
  spec.image_dir = image.path();
  spec.resources = {3, 3072LL << 20, 20LL << 30};
  spec.mounts = {{"projects", "/home/me/super-sandbox/projects", "/home/sandbox/projects", false},
                 {"mount-1", "/srv/data", "/mnt/data", true}};
  spec.user_data = RenderUserData(Input());
  YAML::Node t = YAML::Load(LimaTemplate(spec, 40123));
  EXPECT_EQ(t["vmType"].as<std::string>(), "qemu");
  EXPECT_EQ(t["images"][0]["location"].as<std::string>(), image.path() + "/base.qcow2");
  EXPECT_EQ(t["images"][0]["kernel"]["location"].as<std::string>(), image.path() + "/vmlinuz");
  EXPECT_EQ(t["images"][0]["kernel"]["cmdline"].as<std::string>(), VmImage::kKernelArgs);
  EXPECT_EQ(t["images"][0]["initrd"]["location"].as<std::string>(), image.path() + "/initrd.img");
  EXPECT_EQ(t["cpus"].as<int>(), 3);
  EXPECT_EQ(t["memory"].as<std::string>(), "3072MiB");
  EXPECT_EQ(t["disk"].as<std::string>(), "20480MiB");
  ASSERT_EQ(t["mounts"].size(), 2u);
  EXPECT_EQ(t["mounts"][0]["mountPoint"].as<std::string>(), "/home/sandbox/projects");
  EXPECT_TRUE(t["mounts"][0]["writable"].as<bool>());
  EXPECT_FALSE(t["mounts"][1]["writable"].as<bool>());
  EXPECT_EQ(t["ssh"]["localPort"].as<int>(), 40123);
  EXPECT_FALSE(t["ssh"]["loadDotSSHPubKeys"].as<bool>());
  EXPECT_EQ(t["user"]["name"].as<std::string>(), "sandbox");
  EXPECT_EQ(t["user"]["uid"].as<int>(), 1000);
  for (const auto& rule : t["portForwards"]) EXPECT_TRUE(rule["ignore"].as<bool>());
  ProvisionScripts scripts = CloudConfigToScripts(spec.user_data);
  ASSERT_EQ(t["provision"].size(), 2u);
  EXPECT_EQ(t["provision"][0]["mode"].as<std::string>(), "boot");
  EXPECT_EQ(t["provision"][0]["script"].as<std::string>(), scripts.boot);
  EXPECT_EQ(t["provision"][1]["mode"].as<std::string>(), "system");
  EXPECT_EQ(t["provision"][1]["script"].as<std::string>(), scripts.system);
}

TEST(LimaSnapshots, ReadsQemusTable) {
  auto snaps = ParseLimaSnapshots(
      "ID        TAG               VM SIZE                DATE     VM CLOCK     ICOUNT\n"
      "1         before-upgrade        0 B 2026-11-28 14:05:09 00:00:00.000          0\n"
      "2         b                 1.2 GiB 2026-11-28 14:06:10 00:01:02.003          0\n"
      // While the machine runs: QEMU's `info snapshots`, IDs "--".
      "--        c                 1.2 GiB 2026-11-28 14:07:10 00:01:02.003\n");
  ASSERT_EQ(snaps.size(), 3u);
  EXPECT_EQ(snaps[0].name, "before-upgrade");
  EXPECT_EQ(snaps[2].name, "c");
  EXPECT_EQ(snaps[1].name, "b");
  EXPECT_EQ(snaps[1].created - snaps[0].created, std::chrono::seconds(61));
  EXPECT_TRUE(ParseLimaSnapshots("").empty());
}

}  // namespace
}  // namespace ss
