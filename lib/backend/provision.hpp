// Provisioning data for one sandbox: the cloud-init NoCloud seed (user-data, meta-data)
// rendered from the templates in cloud-init/. It gives the sandbox user this install's key,
// installs the host key made on the host (so it is pinned before the first connection), and
// writes the sandbox's configuration; it runs once per instance and replaces whole files, so
// provisioning again never duplicates a line.
#pragma once

#include <string>
#include <vector>

namespace ss {

class Config;

// What syncs of a working copy never copy (working_copy.hpp): written when the sandbox is
// provisioned, and again by a sync when sync.exclude changed.
inline constexpr const char* kSyncExcludeFile = "/etc/ss/sync-exclude";

struct ProvisionInput {
  std::string hostname;
  std::string instance_id;
  std::string client_public_key;  // "ssh-ed25519 AAAA... comment"
  std::string host_private_key;   // OpenSSH format
  std::string host_public_key;
  int cdp_port = 9222;
  std::string shell = "bash";  // the sandbox user's login shell: bash or fish
  std::string sync_exclude;    // the text of /etc/ss/sync-exclude (below)
  std::string extra;           // more top-level cloud-config (a backend's mounts), or empty
};

std::string RenderUserData(const ProvisionInput& in);
std::string RenderMetaData(const ProvisionInput& in);

// sync.exclude, checked: ss::Error(78) for an empty pattern or one with a line break.
std::vector<std::string> SyncExcludes(const Config& config);
// The text of /etc/ss/sync-exclude for these patterns (a comment header, then one per line).
std::string RenderSyncExclude(const std::vector<std::string>& patterns);

}  // namespace ss
