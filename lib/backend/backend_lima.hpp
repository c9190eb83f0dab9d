// The Lima backend (see backend_lima.cpp for what a sandbox is made of).
#pragma once

#include <optional>
#include <string>

#include "backend.hpp"
#include "json_out.hpp"

namespace ss {

// The Lima template ss makes for a sandbox (YAML), from its spec; `ssh_port` is the host port
// Lima forwards to the machine's sshd.
std::string LimaTemplate(const SandboxSpec& spec, int ssh_port);

// Snapshots as `limactl snapshot list` prints them (QEMU's table: ID, TAG, VM SIZE, DATE, ...).
std::vector<Snapshot> ParseLimaSnapshots(const std::string& text);

class LimaBackend : public Backend {
 public:
  std::string Name() const override { return "lima"; }
  std::string DeleteCommand(const std::string& name) const override {
    return "limactl delete --force " + name;
  }
  Probe CheckHost() override;
  SandboxState State(const std::string& name) override;
  void Create(const SandboxSpec& spec, Progress& progress) override;
  void Start(const std::string& name, const Resources& resources) override;
  void Stop(const std::string& name, std::chrono::seconds timeout) override;
  void Delete(const std::string& name) override;
  SandboxStatus Status(const std::string& name) override;
  SshTarget Ssh(const std::string& name) override;
  void TakeSnapshot(const std::string& name, const std::string& snapshot) override;
  bool SnapshotSeesOnlyTheDisk() const override { return true; }
  void RestoreSnapshot(const std::string& name, const std::string& snapshot) override;
  void DeleteSnapshot(const std::string& name, const std::string& snapshot) override;
  std::vector<Snapshot> Snapshots(const std::string& name) override;
  std::string CannotFence() override;

 private:
  std::string Limactl(const std::vector<std::string>& args, std::string_view what,
                      std::chrono::seconds timeout = std::chrono::seconds(60));
  // `limactl list --json NAME`: the instance, or nothing when Lima has none of that name.
  std::optional<Json> Instance(const std::string& name);
  Json RequireInstance(const std::string& name);
  void RequireSnapshots(const Json& instance);
  void ApplyResources(const std::string& name, const Json& instance, const Resources& resources);
};

}  // namespace ss
