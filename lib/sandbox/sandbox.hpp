// A sandbox: a named machine of some backend, provisioned from the base image, that ss reaches
// over SSH with the install's key and a host key pinned before its first boot.
//
//   $SS_HOME/.ss/sandboxes/<name>/sandbox.json   backend (chosen once, at creation), image, times
//   $SS_HOME/.ss/sandboxes/<name>/host_ed25519   its SSH host key (0600) and .pub
//   $SS_HOME/.ss/sandboxes/<name>/known_hosts    the pinned key, for the current address
//
// Data flows one way: config → sandbox → backend; the sandbox hands an SshEndpoint to whoever
// connects and knows nothing of projects' contents or browsers.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>

#include "backend.hpp"
#include "config.hpp"
#include "fs.hpp"
#include "ssh.hpp"

namespace ss {

inline constexpr const char* kDefaultSandbox = "super-sandbox";

// --sandbox, else SS_SANDBOX, else CLAUDE_SANDBOX, else "super-sandbox"; validated (exit 65).
std::string ResolveSandboxName(const std::string& flag);
// The sandbox --profile NAME runs in: the sandbox NAME, whose settings are profiles.NAME's (see
// Config::SandboxValue). Throws ss::Error(64) when config.yaml has no such profile, or when
// `sandbox_flag` (--sandbox) names another sandbox.
std::string ProfileSandbox(const Config& config, const std::string& profile,
                           const std::string& sandbox_flag);

// Where each sandbox keeps its state on the host: SandboxesDir()/NAME/.
std::string SandboxesDir();
// Whether this install made sandbox `name` (its record exists); asks no backend.
bool SandboxExists(const std::string& name);

// Names of the sandboxes this install has created.
std::vector<std::string> KnownSandboxes();

// What the running sandbox says about itself (over SSH); -1 / nullopt where it could not tell.
struct GuestFacts {
  int64_t uptime_seconds = -1;
  int64_t memory_total = -1, memory_used = -1;
  int64_t disk_total = -1, disk_used = -1;
  std::optional<bool> agent_logged_in;
  std::string agent_version;  // `claude --version` output, empty when it did not answer
};

class Sandbox;

// Where the projects folder is shared in a sandbox.
inline constexpr const char* kProjectsTarget = "/home/sandbox/projects";

// The host folders a sandbox shares, fixed when it is made and recorded with it (shares.hpp):
// the projects folder unless --no-mount, and more: a profile's mounts, --mount's, the folder of
// `ss run DIR` at /workspace/NAME (nothing in copy mode: ss sends the folder).
struct Shares {
  bool projects = true;
  std::vector<Mount> mounts;
  bool operator==(const Shares&) const = default;
};
// What config.yaml asks a new sandbox to share: the projects folder, and sandboxes.NAME.mounts
// (else profiles.NAME.mounts), each checked (ss::Error as ResolveHostFolder; 78 for a bad item).
Shares ConfiguredShares(const Config& config, const std::string& sandbox);
// "the projects folder, /data/x at /data (read-only)", or "no host folder".
std::string DescribeShares(const Shares& shares);

// An open session in a sandbox (ss PROJECT, ss shell, ...). Sessions hold a shared lock; when the
// last one of an ephemeral sandbox ends, the sandbox is deleted (projects stay on the host).
class SessionLease {
 public:
  // `keep`, when set, is asked before an ephemeral sandbox is removed: a reason to keep it.
  SessionLease(Sandbox& sandbox, FileLock lock,
               std::function<std::optional<std::string>()> keep = {});
  ~SessionLease();
  SessionLease(const SessionLease&) = delete;
  SessionLease& operator=(const SessionLease&) = delete;

 private:
  Sandbox& sandbox_;
  std::optional<FileLock> lock_;
  std::function<std::optional<std::string>()> keep_;
};

class Sandbox {
 public:
  // `backend_flag` (from --backend) must match the recorded backend of an existing sandbox.
  Sandbox(std::string name, Config config, std::string backend_flag = "");

  const std::string& name() const { return name_; }
  const std::string& backend_name() const { return backend_name_; }
  // Why this backend: "set with --backend", or what `auto` found when the sandbox was created
  // (or would find now, for a sandbox not created yet).
  const std::string& backend_reason() const { return backend_reason_; }
  bool ephemeral() const;
  Backend& backend() { return *backend_; }
  bool exists() const;  // created by this install (a record exists)
  // The sandbox user's login shell when this call creates the sandbox (--fish), over
  // sandboxes.<name>.shell.
  void set_login_shell(std::string shell) { login_shell_ = std::move(shell); }
  // The host folder shared read-write at /mnt/deploy (deploy.hpp) when this call creates the
  // sandbox (--deploy), over the recorded one (reset keeps it) and sandboxes.<name>.deploy. An
  // existing sandbox refuses a different one (exit 64): it is fixed at creation.
  void set_deploy_dir(std::string dir) { deploy_request_ = std::move(dir); }
  // The deploy folder recorded at creation; empty when the sandbox has none.
  const std::string& deploy_dir() const { return deploy_dir_; }
  // What a session asks to share (--mount, --no-mount, ss run DIR) when this call creates the
  // sandbox, over config.yaml's. Folders are fixed at creation: when the sandbox exists and
  // shares something else, throws ss::Error(64) at once (reading only the record, so the quick
  // path of a session is refused too).
  void set_shares(Shares shares);
  // What the sandbox was made sharing (the projects folder alone for records older than this).
  const Shares& shares() const { return shares_; }

  SandboxState State();
  // How long start waits for SSH by default: 30 s, longer for a VM without hardware
  // acceleration.
  std::chrono::seconds DefaultStartTimeout() const;
  // Configured resources (sandboxes.<name>.* over vm.*).
  Resources DesiredResources() const;

  // Creates the sandbox when missing, starts it when stopped, and waits until SSH answers and
  // provisioning has finished; returns that connection. `timeout` applies to an existing
  // sandbox; a first creation gets longer. Throws the spec's "VM failed to start" / "Could not
  // connect to VM" errors.
  std::unique_ptr<SshConnection> EnsureRunning(Progress& progress, std::chrono::seconds timeout);
  // The quick path of every command: a connection to where the running sandbox last answered,
  // asking the backend nothing. nullptr when that fails (stopped, moved); then EnsureRunning.
  std::unique_ptr<SshConnection> TryConnect();
  void Stop(std::chrono::seconds timeout);
  // Starts the sandbox's ss-net again and re-installs its fence when either is gone (egress.hpp).
  void KeepEgress();
  // Starts the guard of its shared folders when it is gone; `starting`: the sandbox is about to
  // boot (whatever is in them now is the user's).
  void KeepGuard(bool starting = false);
  // Takes a snapshot through the backend; a running machine with a kernel of its own is told
  // to write out what it holds in memory first (over `conn`, or a connection of its own).
  void TakeSnapshot(const std::string& snapshot, SshConnection* conn = nullptr);
  // Deletes the machine and creates a fresh one from the image. Projects are not touched.
  std::unique_ptr<SshConnection> Reset(Progress& progress, std::chrono::seconds timeout);
  void Delete();
  // Marks the start of a session; see SessionLease.
  std::unique_ptr<SessionLease> BeginSession(std::function<std::optional<std::string>()> keep = {});

  // Memory, disk, uptime and login state from inside the running sandbox.
  GuestFacts Inspect();

  // How to reach the running sandbox over SSH (pins the host key for its current address).
  SshEndpoint Endpoint();
  SshOptions Options() const;

  std::string Dir() const;

 private:
  void Create(Progress& progress, const std::string& deploy);
  // The deploy folder a creation now would share, resolved and checked (deploy.hpp errors).
  std::string DeployForCreation() const;
  std::unique_ptr<SshConnection> WaitReady(Progress& progress, std::chrono::seconds timeout);
  // Throws ss::Error(69) unless the projects folder (and the deploy folder) are mounted.
  // Writes where the sandbox's proxy is into its /etc/environment.
  void PointAtProxy(SshConnection& conn) const;
  void CheckShared(SshConnection& conn) const;
  SshEndpoint EndpointAt(const SshTarget& target);
  void WriteRecord(const std::string& image_id, bool complete);

  std::string name_;
  Config config_;
  std::string backend_name_;
  std::string backend_reason_;
  bool record_complete_ = true;
  std::unique_ptr<Backend> backend_;
  std::string login_shell_;
  std::string deploy_request_;
  std::string deploy_dir_;
  std::optional<Shares> share_request_;
  Shares shares_;
};

// The spec's errors, shared by every command that starts or reaches a sandbox.
// `why_details`: the lines that came with `why` (a tool's last words), after it.
Error VmFailedToStart(const std::string& backend, const std::string& why,
                      const std::vector<std::string>& why_details = {});
Error CouldNotConnect(const std::string& why, const std::string& console_log = {});

}  // namespace ss
