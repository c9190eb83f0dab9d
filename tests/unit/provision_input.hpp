// The provisioning input the unit tests render templates from.
#pragma once

#include "provision.hpp"

namespace ss {

inline ProvisionInput TestProvisionInput() {
  ProvisionInput in;
  in.hostname = "box";
  in.instance_id = "box-1";
  in.client_public_key = "ssh-ed25519 AAAAclient ss";
  in.host_private_key =
      "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\n-----END OPENSSH PRIVATE "
      "KEY-----\n";
  in.host_public_key = "ssh-ed25519 AAAAhost ss-box";
  in.cdp_port = 9333;
  return in;
}

}  // namespace ss
