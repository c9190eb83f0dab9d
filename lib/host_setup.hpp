// Preparing the host for a backend: packages, daemons (started by hand where there is no init
// system), and first-time initialisation. Never changes a set-up the user already made: an LXD
// whose default profile has a root disk and a network is used as it is.
#pragma once

#include <string>
#include <vector>

namespace ss {

class Progress;

struct SetupReport {
  std::vector<std::string> done;                     // what was changed, in words
  std::vector<std::pair<std::string, int>> started;  // daemons started: name, pid
};

// Installs, starts and initialises LXD so that sandboxes can run. Needs root for anything it
// has to change.
SetupReport SetupLxd(Progress& progress);

// Stops the daemons SetupLxd started (recorded in the runtime directory) and removes what LXD
// leaves in the host's firewall when it stops. Daemons the user started are left alone.
SetupReport TeardownLxd(Progress& progress);

// Whether an init system manages services here (systemd as PID 1).
bool HaveSystemd();

}  // namespace ss
