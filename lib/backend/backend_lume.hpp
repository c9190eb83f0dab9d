// The Lume backend (see backend_lume.cpp for what a sandbox is made of).
#pragma once

#include <string>
#include <vector>

#include "backend.hpp"
#include "lume_api.hpp"

namespace ss {

// The image a Lume sandbox is made from (IMAGE[:TAG] of ghcr.io/trycua): the spec's.
constexpr const char* kLumeImage = "ubuntu-noble-vanilla:latest";
// shell/ss-install-tools, in the seed folder.
constexpr const char* kLumeInstallTools = "install-tools";

// The script the first boot runs as root from the seed folder: the image's user (uid 1000)
// becomes the sandbox user without a password, the shares are mounted on every boot (fstab),
// what the image lacks of ss's tools is installed (kLumeInstallTools, beside it in the folder),
// and then the sandbox's #cloud-config, as the Lima backend's scripts (provision_script.hpp).
// `folders` are the shares' folders under the virtio-fs tag, one per mount of the spec.
std::string LumeFirstBoot(const SandboxSpec& spec, const std::vector<std::string>& folders);

class LumeBackend : public Backend {
 public:
  // `dir`: where the backend keeps what Lume forgets (each sandbox's shares, its snapshots).
  LumeBackend(std::string url, std::string dir);
  std::string Name() const override { return "lume"; }
  std::string DeleteCommand(const std::string& name) const override {
    return "lume delete " + name;
  }
  Probe CheckHost() override;
  SandboxState State(const std::string& name) override;
  bool UsesImage() const override { return false; }
  void Create(const SandboxSpec& spec, Progress& progress) override;
  void Start(const std::string& name, const Resources& resources) override;
  void Stop(const std::string& name, std::chrono::seconds timeout) override;
  void Delete(const std::string& name) override;
  SandboxStatus Status(const std::string& name) override;
  SshTarget Ssh(const std::string& name) override;
  void TakeSnapshot(const std::string& name, const std::string& snapshot) override;
  bool SnapshotSeesOnlyTheDisk() const override { return true; }
  bool SnapshotRestarts() const override { return true; }
  void RestoreSnapshot(const std::string& name, const std::string& snapshot) override;
  void DeleteSnapshot(const std::string& name, const std::string& snapshot) override;
  std::vector<Snapshot> Snapshots(const std::string& name) override;
  std::string CannotFence() override;

 private:
  std::string Dir(const std::string& name) const;
  Json RequireVm(const std::string& name);
  std::vector<LumeShare> Shares(const std::string& name) const;
  // When each snapshot was taken ({"SNAPSHOT": seconds since the epoch}): Lume keeps no time.
  Json SnapshotTimes(const std::string& name) const;
  void SaveSnapshotTimes(const std::string& name, const Json& times) const;
  // Runs the machine with its shares (and `extra` after them) and waits until its sshd answers.
  Json RunAndWait(const std::string& name, const std::vector<LumeShare>& extra = {});
  void WaitWhilePulling(const std::string& name, Progress& progress);
  void FirstBoot(const SandboxSpec& spec, Progress& progress);
  LumeApi api_;
  std::string dir_;
};

}  // namespace ss
