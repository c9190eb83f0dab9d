// The sandbox backend interface. One implementation per file (backend_lxd.cpp, ...), plus an
// in-memory fake for unit tests. A backend knows nothing of projects or browsers: it creates,
// starts, stops and describes machines, and says how SSH reaches them.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "image.hpp"
#include "net_fence.hpp"

namespace ss {

class Config;
class Progress;

enum class SandboxState { kNotExists, kStopped, kStarting, kRunning, kBroken };
std::string StateName(SandboxState state);  // "not-exists", "stopped", ...

struct Resources {
  int cpus = 0;
  int64_t memory = 0;  // bytes
  int64_t disk = 0;    // bytes
  // Containers only (a VM's kernel keeps its own): tasks (processes and threads) the sandbox may
  // run at once, and the open files each of its processes may hold (soft and hard limit; root
  // inside cannot raise it). 0: the engine's default.
  int64_t processes = 0;
  int64_t open_files = 0;
};

// The sandbox user's uid and gid inside every image.
constexpr uid_t kSandboxUserId = 1000;

// A directory of the host shared into the sandbox.
struct Mount {
  std::string name;    // device / tag name: "projects", "workspace", "deploy", "mount-N"
  std::string source;  // host path
  std::string target;  // path in the sandbox
  // Read-only against root in the sandbox too: LXD and QEMU shares always are; a Docker
  // sandbox's is a volume of its own that shows the folder as it was when the sandbox started,
  // and Podman cannot make one.
  bool read_only = false;
  bool operator==(const Mount&) const = default;
};
// A mount as records keep it ({name, source, target, read_only}), and back.
nlohmann::ordered_json MountToJson(const Mount& m);
Mount MountFromJson(const nlohmann::ordered_json& j);

// Everything a backend needs to create a sandbox. Provisioning data (cloud-init) is rendered by
// the caller; the backend only delivers it to the machine.
struct SandboxSpec {
  std::string name;
  std::string image_id;  // the base image (see image.hpp), exported to the backend's format
  std::string image_dir;
  Resources resources;
  std::vector<Mount> mounts;
  std::string user_data;  // cloud-init #cloud-config
  std::string meta_data;  // cloud-init meta-data
  // For a backend that boots an image of its own (UsesImage() false): what ss's image has, to
  // be installed there on the first boot when missing.
  ImageTools tools;
  // Owner of the shared folders on the host. Every backend shows the owner's files as the
  // sandbox user's and gives the owner every file the sandbox user makes there.
  uid_t host_uid = 0;
  gid_t host_gid = 0;
  bool ephemeral = false;
  // Container engines: the network of the sandbox's own it is attached to, and the resolver it
  // is given (the network's gateway, where ss-net answers). Empty: the engine's default.
  std::string network;
  std::string dns;
  // Called once the machine and its network exist and before it first boots: the sandbox's
  // network is fenced from its first packet on (Egress() already answers then).
  std::function<void()> before_first_boot;
};

struct SshTarget {
  std::string host;
  int port = 22;
};

struct SandboxStatus {
  SandboxState state = SandboxState::kNotExists;
  std::string detail;  // why broken, or backend notes ("TCG: no hardware virtualization")
  int64_t uptime_seconds = -1;
  Resources limits;          // configured limits (0: unknown/unlimited)
  int64_t memory_used = -1;  // bytes, -1 when unknown
  int64_t disk_used = -1;
  std::string address;  // the sandbox's own address, when it has one
};

struct Snapshot {
  std::string name;
  std::chrono::system_clock::time_point created;
};

// Whether a backend can run on this machine, and if not, why and how to fix it.
struct Probe {
  bool usable = false;
  // Runs, but poorly: `auto` takes it only when nothing else is usable (QEMU without hardware
  // acceleration).
  bool degraded = false;
  std::string reason;  // "lxd is not running", "/dev/kvm is PVM: no hardware virtualization"
  std::string fix;     // "start it: ss vm setup" (empty when nothing to do)
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string Name() const = 0;
  virtual Probe CheckHost() = 0;

  virtual SandboxState State(const std::string& name) = 0;
  // The backend's own command that deletes its machine `name` (for a hint about a machine this
  // install has no record of), or empty when it has none.
  virtual std::string DeleteCommand(const std::string& /*name*/) const { return {}; }
  // Whether its machines are made from ss's image (SandboxSpec::image_id); Lume's are made from
  // an image of Lume's own.
  virtual bool UsesImage() const { return true; }
  // Creates the machine from the base image with the spec's provisioning, and starts it.
  virtual void Create(const SandboxSpec& spec, Progress& progress) = 0;
  virtual void Start(const std::string& name, const Resources& resources) = 0;
  // Graceful stop; forced after `timeout`.
  virtual void Stop(const std::string& name, std::chrono::seconds timeout) = 0;
  virtual void Delete(const std::string& name) = 0;
  virtual SandboxStatus Status(const std::string& name) = 0;
  // Where the sandbox's sshd listens, as reachable from this host.
  virtual SshTarget Ssh(const std::string& name) = 0;
  // The file on this host that holds the machine's console (its boot messages), for a user
  // whose sandbox runs but never answers; empty when the backend keeps none.
  virtual std::string ConsoleLog(const std::string& /*name*/) const { return {}; }

  virtual void TakeSnapshot(const std::string& name, const std::string& snapshot) = 0;
  // True when a snapshot of the running machine holds only its disk, and the machine's own kernel
  // may still hold written data in memory (a VM): the guest is told to write it out first.
  virtual bool SnapshotSeesOnlyTheDisk() const { return false; }
  // True when a snapshot of the running machine stops it and starts it again (Lume copies only
  // a stopped machine): every connection to it ends.
  virtual bool SnapshotRestarts() const { return false; }
  virtual void RestoreSnapshot(const std::string& name, const std::string& snapshot) = 0;
  virtual void DeleteSnapshot(const std::string& name, const std::string& snapshot) = 0;
  virtual std::vector<Snapshot> Snapshots(const std::string& name) = 0;

  // Removes the backend's own copy of a built image (imported into LXD or a container engine);
  // false when it has none. Throws when the copy stays (the engine still uses it).
  virtual bool RemoveImageCopy(const std::string& /*image_id*/) { return false; }

  // Where the sandbox's traffic reaches the host, for the fence and ss-net (egress.hpp); nothing
  // when this backend does not fence its sandboxes yet.
  virtual std::optional<EgressLink> Egress(const std::string& /*name*/) { return std::nullopt; }
  // Why this backend, as configured here, cannot fence a new sandbox's network (a remote LXD,
  // rootless Podman); empty when it can.
  virtual std::string CannotFence() { return {}; }
  // Why root in this backend's sandboxes, as configured here, is root on the host (a container
  // engine with no user namespace between them); empty when root inside is contained.
  virtual std::string RootIsHostRoot() { return {}; }
};

// Throws ss::Error(66) "no snapshot 'S' of 'NAME'" unless `backend` has that snapshot.
void RequireSnapshot(Backend& backend, const std::string& name, const std::string& snapshot);

}  // namespace ss
