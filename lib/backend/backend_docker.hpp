// The Docker and Podman backends: one long-lived system container per sandbox (systemd as PID 1,
// sshd inside), driven through the engine's CLI. Docker and Podman share this code; they differ
// in the client, a few flags and the daemon (see backend_docker.cpp).
#pragma once

#include <string>
#include <vector>

#include "backend.hpp"
#include "json_out.hpp"

namespace ss {

struct ContainerEngine {
  std::string name;     // "docker" or "podman"
  std::string display;  // "Docker" or "Podman"
  std::string client;   // the CLI: the first on PATH
};
ContainerEngine FindEngine(const std::string& name);

// Limits the container's processes start with, where the engine's defaults would exceed what
// this process may grant (Podman asks for 1048576 open files; without CAP_SYS_RESOURCE that
// fails): open files up to our hard limit, processes up to our hard limit and pid_max.
struct ContainerRlimits {
  uint64_t nofile = 0;
  uint64_t nproc = 0;
};
ContainerRlimits HostRlimits();

// The image reference of the base image `image_id` in the engine.
std::string ContainerImageRef(const std::string& engine, const std::string& image_id);

// Where a sandbox's id-mapped views live, and whether it needs them: its folders belong to
// someone other than the sandbox user's host uid (1000; the engine maps no ids).
std::string ContainerViewsDir(const std::string& engine, const std::string& name);
bool ContainerNeedsViews(const SandboxSpec& spec);

// The arguments of `<engine> create` for a sandbox (without the client itself). Pure.
std::vector<std::string> ContainerCreateArgs(const std::string& engine, const SandboxSpec& spec,
                                             const std::string& image_ref,
                                             const ContainerRlimits& rlimits, bool have_fuse);

// "2026-11-26T00:25:38.49Z" (Docker) or "2026-11-26 00:26:05.32 +0000 UTC" (Podman) as seconds
// since the epoch; -1 when unreadable or zero.
int64_t ParseEngineTime(const std::string& text);

class ContainerBackend : public Backend {
 public:
  explicit ContainerBackend(const std::string& engine);

  std::string Name() const override { return engine_.name; }
  std::string DeleteCommand(const std::string& name) const override {
    return engine_.name + " rm --force " + name;
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
  std::string RootIsHostRoot() override;

 private:
  // Runs the client; a daemon that does not answer is ss::Error(69) with the command that starts
  // it, any other failure ss::Error(69) "<what>: <the engine's words>".
  std::string Cli(const std::vector<std::string>& args, std::string_view what,
                  std::chrono::seconds timeout = std::chrono::seconds(60),
                  const std::optional<std::string>& input = std::nullopt);
  Json Inspect(const std::string& name);  // null: no such container
  void EnsureImage(const std::string& image_id, const std::string& image_dir, Progress& progress);
  void Update(const std::string& name, const Resources& resources);
  // The limits of `r` this engine can enforce here (others 0; said when `say`).
  Resources Applicable(Resources r, bool say);
  std::string SnapshotRepo(const std::string& name) const;
  std::string KeepRepo(const std::string& name) const;
  // Makes the container again from `image_ref` with the arguments it was made with (its volume
  // stays); it is left stopped.
  void Recreate(const std::string& name, const std::string& image_ref);
  // The sandbox's own bridge network (created when missing and `create`): its name, the host
  // side's interface and the gateway, where ss-net listens. Nothing for rootless Podman.
  struct Network {
    std::string name, bridge, gateway;
  };
  std::optional<Network> AttachNetwork(const std::string& name, bool create);
  // Mounts the id-mapped views of the sandbox's folders, when it needs them, and makes the
  // volumes of its read-only ones (refused on Podman, ss::Error 69).
  void EnsureViews(const SandboxSpec& spec);
  void RemoveReadOnlyVolumes(const std::string& name);

  ContainerEngine engine_;
  bool limits_known_ = false;
  bool cpu_limits_ = true;
  bool memory_limits_ = true;
};

}  // namespace ss
