// The LXD backend (see backend_lxd.cpp for what a sandbox is made of).
#pragma once

#include <optional>
#include <string>

#include "backend.hpp"
#include "json_out.hpp"

namespace ss {

// The instance settings `lxc config set` gives a container for `r` ("limits.cpu=0-3", ...); none
// for a limit left at 0. Pure.
std::vector<std::string> LxdLimits(const Resources& r);

class LxdBackend : public Backend {
 public:
  // `remote` is an LXD remote name ("" for the local daemon).
  explicit LxdBackend(std::string remote);

  std::string Name() const override { return "lxd"; }
  std::string DeleteCommand(const std::string& name) const override {
    return "lxc delete --force " + Ref(name);
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
  void RestoreSnapshot(const std::string& name, const std::string& snapshot) override;
  void DeleteSnapshot(const std::string& name, const std::string& snapshot) override;
  std::vector<Snapshot> Snapshots(const std::string& name) override;
  bool RemoveImageCopy(const std::string& image_id) override;
  std::optional<EgressLink> Egress(const std::string& name) override;
  std::string CannotFence() override;

 private:
  std::string Ref(const std::string& name) const;  // "remote:name" or "name"
  std::string Lxc(const std::vector<std::string>& args, std::string_view what,
                  std::chrono::seconds timeout = std::chrono::seconds(60));
  std::optional<Json> Query(const std::string& path);  // nullopt: 404
  Json Instance(const std::string& name);              // null: no such instance
  void EnsureImage(const std::string& image_id, const std::string& image_dir, Progress& progress);
  void ApplyResources(const std::string& name, const Resources& resources);
  int64_t DaemonOpenFiles();
  void StartWithFreePort(const std::string& name);
  std::string ViewsOf(const std::string& name) const;  // the folder of its id-mapped views
  // Mounts the views a sandbox of root's shares its folders through (none for other users').
  void EnsureViews(const std::string& name, const Json& instance);
  // A local sandbox's own network (a bridge of its own, no NAT) and its NIC there; the gateway.
  std::string AttachNetwork(const std::string& name);
  // Removes the snapshots of `name`'s volume that a local LXD left on disk without a record:
  // a snapshot LXD could not finish (its walk of the container's files stops at a path longer
  // than the host's 4096 bytes, after the volume's snapshot is made) stays behind, and LXD then
  // refuses to delete the container. Needs root; the paths it could not remove.
  std::vector<std::string> RemoveOrphanSnapshots(const std::string& name);

  std::string remote_;
};

}  // namespace ss
