// Preparing the host for a backend: packages, daemons (started by hand where there is no init
// system), and first-time initialisation. Never changes a set-up the user already made: an LXD
// whose default profile has a root disk and a network is used as it is.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace ss {

class Progress;

struct SetupReport {
  std::vector<std::string> done;                     // what was changed, in words
  std::vector<std::pair<std::string, int>> started;  // daemons started: name, pid
};

// Each Setup* installs what ss, the image build and that backend need, then starts and
// initialises the backend.
// Installs, starts and initialises LXD so that sandboxes can run. Needs root for anything it
// has to change.
SetupReport SetupLxd(Progress& progress);

// Stops the daemons SetupLxd started (recorded in the runtime directory) and removes what LXD
// leaves in the host's firewall when it stops. Daemons the user started are left alone.
SetupReport TeardownLxd(Progress& progress);

// The same for the other backends. Docker: the package (unless an engine is installed) and
// dockerd, started by hand where no init system runs, recorded with what the host's network
// looked like before, so that TeardownDocker can put back what dockerd changed (the docker0
// bridge, its iptables rules, the FORWARD policy, ip_forward). Podman has no daemon: only the
// package. QEMU: its packages; it runs as the user's own processes.
SetupReport SetupDocker(Progress& progress);
SetupReport TeardownDocker(Progress& progress);
SetupReport SetupPodman(Progress& progress);
SetupReport SetupQemu(Progress& progress);
// Lima: what ss and the image build need; Lima itself is the user's to install (no archive
// Debian 12 has carries it): ss::Error(69) saying where from when limactl is missing.
SetupReport SetupLima(Progress& progress);
// Lume: the core packages; Lume itself comes from its own installer.
SetupReport SetupLume(Progress& progress);

// The size of the loop file ss gives LXD's btrfs pool, as LXD sizes one itself: a fifth of the
// `free` bytes of its disk (-1: unknown), at least 5 GiB and at most 30 GiB, in whole GiB. The
// file is sparse: a larger one would let sandboxes fill the host's disk.
int64_t LxdPoolBytes(int64_t free);

// Whether an init system manages services here (systemd as PID 1).
bool HaveSystemd();

}  // namespace ss
