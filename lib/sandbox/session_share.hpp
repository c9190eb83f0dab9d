// Connection sharing (what OpenSSH calls a control master): one background process per sandbox
// holds an authenticated SSH connection, and commands without a terminal (`ss PROJECT -- CMD`,
// `ss exec`, `ss claude-run`, `ss docker`) run over it instead of paying for a new connection,
// key exchange and sshd session each time. The command's stdin, stdout and stderr are the
// caller's own descriptors, passed over a unix socket (SCM_RIGHTS), so output streams exactly as
// it would over a connection of its own; the exit status comes back the same way.
//
//   $XDG_RUNTIME_DIR/ss (or /tmp/ss-<uid>, 0700)/share-<sandbox>-<hash of SS_HOME>.sock
//
// The master exits after ten idle minutes, or when its connection ends (the sandbox stopped).
// Secrets travel over the socket to the master and on from there as every session sends them:
// never in an argv, never on disk.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ssh_command.hpp"

namespace ss {

class Sandbox;

struct SharedCommand {
  std::vector<std::string> argv;
  std::string cwd;
  EnvList secret_env;
  // The command's stdin, stdout and stderr: the caller's own unless given.
  int fds[3] = {0, 1, 2};
};

// Runs the command through the sandbox's master when one is listening: returns its exit status,
// or nullopt when there is no master (the caller connects itself). SIGINT, SIGTERM and SIGHUP
// received meanwhile are passed on to the remote command. Throws ss::Error(255) when the master
// goes away mid-command.
std::optional<int> RunShared(const std::string& sandbox, const SharedCommand& command);

// Tells the sandbox's master, if one runs, to end now (the sandbox is being stopped or deleted:
// its connection would otherwise linger until the idle time is up).
void EndShareMaster(const std::string& sandbox);

// Starts a master for the sandbox in the background (a new session, output to /dev/null) by
// running `executable --share-master SANDBOX`; returns at once.
void StartShareMaster(const std::string& executable, const std::string& sandbox);

// The master itself: connects to the running sandbox (never starts it) and serves commands
// until idle or disconnected. Returns the exit status for the master process.
int ServeShared(Sandbox& sandbox);

}  // namespace ss
