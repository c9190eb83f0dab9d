// The provisioning of a sandbox as shell scripts, for machines that do not take ss's cloud-init
// seed (Lima runs its own cloud-init, and takes `provision` scripts instead). The scripts are
// made from the same rendered #cloud-config (provision.hpp) every other backend delivers, so
// there is one provisioning, not two: the keys it knows are the ones cloud-init/user-data uses,
// and any other key is refused, so that a key added to the template is never silently dropped.
#pragma once

#include <string>

namespace ss {

struct ProvisionScripts {
  // Run as root on every boot before sshd starts (Lima's `mode: boot`, cloud-init's bootcmd):
  // the pinned host key, the install's key for the sandbox user, and an sshd drop-in that uses
  // both, so the first connection is already verified.
  std::string boot;
  // Run as root once the machine is up (Lima's `mode: system`): the hostname, the files and the
  // commands of the #cloud-config, in its order.
  std::string system;
};

// Throws ss::Error(70) for a #cloud-config this does not understand (see above).
ProvisionScripts CloudConfigToScripts(const std::string& user_data);

}  // namespace ss
