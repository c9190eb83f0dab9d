// A QEMU machine's description and command line: what one boot needs (QemuLaunch), the
// qemu-system argv made from it, the restricted user network, and where its shared folders come
// from. The backend (backend_qemu.cpp) writes machines; the supervisor (qemu_supervisor.cpp)
// boots them: both use this, and neither uses the other's header but the supervisor's.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "host.hpp"
#include "json_out.hpp"

namespace ss {

// The machine's disk, as QMP's block commands name it.
inline constexpr const char* kQemuDiskId = "disk";

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
std::string QemuViewsDir(const std::string& machine_dir);
std::string QemuShareSource(const std::string& machine_dir, const Json& machine, const Json& share);
void QemuEnsureViews(const std::string& machine_dir, const Json& machine);

// The qemu-system command line for `l` (an argv, never a shell line).
std::vector<std::string> QemuArgv(const QemuLaunch& l);
// Its -netdev: the user network restricted to SSH in and the guestfwd relays out.
std::string QemuNetdev(const QemuLaunch& l);
// The sandbox's cloud-config with what ss's QEMU guests add (cloud-init/qemu.yaml): the resolver on
// the restricted network, and cloud-init off after the first boot.
std::string QemuUserData(const std::string& user_data);
// Escapes a value for QEMU's option syntax (a comma is doubled).
std::string QemuOptionValue(const std::string& value);
// The SSH port of the first host forward in the output of HMP "info usernet", or 0.
int ParseUsernetSshPort(const std::string& info_usernet);

}  // namespace ss
