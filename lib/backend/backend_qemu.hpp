// The QEMU backend: a real virtual machine per sandbox, driven directly (see backend_qemu.cpp
// for what a machine is made of, qemu_machine.hpp for its command line and qemu_supervisor.hpp
// for how it is kept).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend.hpp"

namespace ss {

class QemuBackend : public Backend {
 public:
  // Machines live under `state_dir`/qemu/<name>/.
  explicit QemuBackend(std::string state_dir);

  std::string Name() const override { return "qemu"; }
  bool SnapshotSeesOnlyTheDisk() const override { return true; }
  Probe CheckHost() override;
  SandboxState State(const std::string& name) override;
  void Create(const SandboxSpec& spec, Progress& progress) override;
  void Start(const std::string& name, const Resources& resources) override;
  void Stop(const std::string& name, std::chrono::seconds timeout) override;
  void Delete(const std::string& name) override;
  SandboxStatus Status(const std::string& name) override;
  SshTarget Ssh(const std::string& name) override;
  std::string ConsoleLog(const std::string& name) const override;
  void TakeSnapshot(const std::string& name, const std::string& snapshot) override;
  void RestoreSnapshot(const std::string& name, const std::string& snapshot) override;
  void DeleteSnapshot(const std::string& name, const std::string& snapshot) override;
  std::vector<Snapshot> Snapshots(const std::string& name) override;
  std::optional<EgressLink> Egress(const std::string& name) override;

  std::string MachineDir(const std::string& name) const;

 private:
  void RequireStopped(const std::string& name, std::string_view what);
  void ApplyResources(const std::string& name, const Resources& resources);
  void StopMachine(const std::string& name, std::chrono::seconds timeout);
  std::string state_dir_;
};

}  // namespace ss
