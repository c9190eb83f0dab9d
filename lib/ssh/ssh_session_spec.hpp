// Building blocks shared by the session kinds of an SshConnection (internal to the SSH layer).
#pragma once

#include <signal.h>

#include <optional>
#include <string>

#include "ssh_command.hpp"
#include "ssh_mux.hpp"
#include "terminal.hpp"

namespace ss::ssh_detail {

struct PtyRequest {
  std::string term;
  WindowSize size;
};

// A session channel: open, optional pty-req, one env request per variable, then exec (or shell
// when the command line is empty).
ChannelSpec SessionSpec(const EnvList& env, const RemoteCommand& cmd,
                        const std::optional<PtyRequest>& pty);

// Ignores a signal (SIGPIPE while writing to our stdout) for the life of the object.
class ScopedIgnoreSignal {
 public:
  explicit ScopedIgnoreSignal(int sig);
  ~ScopedIgnoreSignal();
  ScopedIgnoreSignal(const ScopedIgnoreSignal&) = delete;
  ScopedIgnoreSignal& operator=(const ScopedIgnoreSignal&) = delete;

 private:
  int sig_;
  struct sigaction old_ {};
};

}  // namespace ss::ssh_detail
