// Provisioning data for one sandbox: the cloud-init NoCloud seed (user-data, meta-data)
// rendered from the templates in cloud-init/. It gives the sandbox user this install's key,
// installs the host key made on the host (so it is pinned before the first connection), and
// writes the sandbox's configuration; it runs once per instance and replaces whole files, so
// provisioning again never duplicates a line.
#pragma once

#include <string>
#include <vector>

namespace ss {

struct ProvisionInput {
  std::string hostname;
  std::string instance_id;
  std::string client_public_key;  // "ssh-ed25519 AAAA... comment"
  std::string host_private_key;   // OpenSSH format
  std::string host_public_key;
  int cdp_port = 9222;
  std::string shell = "bash";  // the sandbox user's login shell: bash or fish
  std::string sync_exclude;    // the text of /etc/ss/sync-exclude (see working_copy.hpp)
  std::string extra;           // more top-level cloud-config (a backend's mounts), or empty
};

std::string RenderUserData(const ProvisionInput& in);
std::string RenderMetaData(const ProvisionInput& in);

}  // namespace ss
