// An in-memory backend for unit tests: machines are map entries, nothing runs. Tests register
// it with RegisterBackend("fake", ...) and drive the layers above backends through it.
#pragma once

#include <map>
#include <string>

#include "backend.hpp"

namespace ss {

class FakeBackend : public Backend {
 public:
  struct Machine {
    SandboxState state = SandboxState::kStopped;
    Resources resources;
    SandboxSpec spec;
    std::vector<Snapshot> snapshots;
    int starts = 0;
    // The machine's "disk": what snapshots save and restores bring back.
    std::map<std::string, std::string> files;
    std::map<std::string, std::map<std::string, std::string>> saved;  // by snapshot name
  };

  std::string Name() const override { return "fake"; }
  Probe CheckHost() override { return probe; }
  SandboxState State(const std::string& name) override;
  void Create(const SandboxSpec& spec, Progress& progress) override;
  void Start(const std::string& name, const Resources& resources) override;
  void Stop(const std::string& name, std::chrono::seconds timeout) override;
  void Delete(const std::string& name) override;
  SandboxStatus Status(const std::string& name) override;
  SshTarget Ssh(const std::string& name) override;
  void TakeSnapshot(const std::string& name, const std::string& snapshot) override;
  void RestoreSnapshot(const std::string& name, const std::string& snapshot) override;
  void DeleteSnapshot(const std::string& name, const std::string& snapshot) override;
  std::vector<Snapshot> Snapshots(const std::string& name) override;

  Probe probe{true, false, "fake backend", ""};
  SshTarget target{"127.0.0.1", 22};
  std::map<std::string, Machine> machines;

 private:
  Machine& Get(const std::string& name);
};

}  // namespace ss
