// The QEMU backend: a real virtual machine per sandbox, driven directly (see backend_qemu.cpp
// for what a machine is made of and qemu_supervisor.hpp for how it is kept).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "backend.hpp"
#include "host.hpp"
#include "json_out.hpp"

namespace ss {

// A shared folder as the guest sees it: a virtiofs or 9p tag mounted at `target`.
struct QemuShare {
  std::string tag;
  std::string source;
  std::string target;
  bool read_only = false;
  std::string vfs_socket;  // virtiofsd's socket (virtiofs); empty: 9p
};

// Where a guest on QEMU's restricted user network finds ss-net's proxy (port kSandboxProxyPort)
// and resolver (port 53, over TCP): a guestfwd address of its own (libslirp refuses the host's
// 10.0.2.2 and the DNS address 10.0.2.3 for guestfwd).
inline constexpr const char* kQemuEgressAddress = "10.0.2.100";

// Everything one boot of a machine needs.
struct QemuLaunch {
  std::string qemu = "qemu-system-x86_64";
  Accel accel;
  int cpus = 2;
  int64_t memory_mib = 2048;
  std::string kernel, initrd, append;
  std::string disk;  // qcow2 overlay
  std::string seed;  // NoCloud ISO
  int ssh_port = 0;  // 0: any free port (read back from QEMU)
  // The guest's only ways out: `RELAY relay --sandbox NAME --to proxy|dns` (ss-net), spawned by
  // QEMU for each connection to kQemuEgressAddress.
  std::string relay;
  std::vector<QemuShare> shares;
  bool root = true;  // 9p keeps owners (passthrough) only when QEMU runs as root
  std::string qmp_socket;
  std::string console_log;
  std::string name;
};

// Where a machine (its folder and machine.json) shares a folder from: the folder itself, or,
// when ss runs as root (virtiofsd keeps the guest's ids) and the folders' owner is not the
// sandbox user's uid, the folder's id-mapped view (idmap_view.hpp), which QemuEnsureViews mounts.
bool QemuNeedsViews(const Json& machine);
std::string QemuShareSource(const std::string& machine_dir, const Json& machine, const Json& share);
void QemuEnsureViews(const std::string& machine_dir, const Json& machine);

// The qemu-system command line for `l` (an argv, never a shell line).
std::vector<std::string> QemuArgv(const QemuLaunch& l);
// Its -netdev: the user network restricted to SSH in and the guestfwd relays out.
std::string QemuNetdev(const QemuLaunch& l);
// The sandbox's cloud-config with what the guest needs on the restricted network (its resolver).
std::string QemuUserData(const std::string& user_data);
// Escapes a value for QEMU's option syntax (a comma is doubled).
std::string QemuOptionValue(const std::string& value);
// The SSH port of the first host forward in the output of HMP "info usernet", or 0.
int ParseUsernetSshPort(const std::string& info_usernet);

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
