// SSH keys and pinned host keys.
//
//   $SS_HOME/.ss/id_ed25519(.pub)   the install's client key, made on first use (0600, dir 0700)
//   a sandbox's host key            made on the host, injected by provisioning, pinned at once:
//                                   ss never trusts a host key on first use
//   known_hosts files               OpenSSH format, one entry per "host" or "[host]:port",
//                                   replaced atomically under a lock
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace ss {

struct KeyPair {
  std::string private_key;  // OpenSSH format, "-----BEGIN OPENSSH PRIVATE KEY-----..."
  std::string public_key;   // one line: "ssh-ed25519 AAAA... comment" (no newline)
};

// A new ed25519 key pair; `comment` ends the public key line.
KeyPair GenerateEd25519Key(std::string_view comment);

// Writes `path` (0600) and `path`.pub (0644), each atomically.
void WriteKeyPair(const std::string& path, const KeyPair& pair);

// The public key line ("type base64 comment") of a private key file or a .pub file.
std::string ReadPublicKey(const std::string& path);

// "SHA256:..." as ssh-keygen -l prints it, for a public key line.
std::string KeyFingerprint(std::string_view public_key_line);

// The install's client key: $SS_HOME/.ss/id_ed25519 and .pub, created under a lock on first use.
// Returns the private key's path. Throws ss::Error(77) when the key is readable by others.
std::string EnsureClientKey();

// The name a known_hosts entry uses for an endpoint: "host" for port 22, else "[host]:port".
std::string KnownHostsName(std::string_view host, int port);

// Adds or replaces the pinned key of host:port in `known_hosts_file` (created 0644 with its
// directory if missing). Other entries stay as they are; names of the endpoint in shared entries
// ("a,b key") are removed from them.
void PinHostKey(const std::string& known_hosts_file, std::string_view host, int port,
                std::string_view public_key_line);

// Removes every entry of host:port. Returns whether there was one.
bool UnpinHostKey(const std::string& known_hosts_file, std::string_view host, int port);

// The public key lines pinned for host:port ("type base64"), in file order.
std::vector<std::string> PinnedHostKeys(const std::string& known_hosts_file, std::string_view host,
                                        int port);

// A sandbox's host key, generated on the host so that it is pinned before the first connection:
// writes `key_path` (0600) and `key_path`.pub for provisioning to install as the sandbox's
// /etc/ssh/ssh_host_ed25519_key, and pins the public key for host:port in `known_hosts_file`.
KeyPair CreateSandboxHostKey(const std::string& key_path, const std::string& known_hosts_file,
                             std::string_view host, int port);

}  // namespace ss
