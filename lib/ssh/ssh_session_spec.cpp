#include "ssh_session_spec.hpp"

#include <libssh/libssh.h>

#include "strings.hpp"

namespace ss::ssh_detail {

ChannelSpec SessionSpec(const EnvList& env, const RemoteCommand& cmd,
                        const std::optional<PtyRequest>& pty) {
  ChannelSpec spec;
  spec.what = "session";
  spec.open = [](ssh_channel ch) { return ssh_channel_open_session(ch); };
  if (pty) {
    spec.requests.push_back({"PTY request", [p = *pty](ssh_channel ch) {
                               return ssh_channel_request_pty_size(ch, p.term.c_str(), p.size.cols,
                                                                   p.size.rows);
                             }});
  }
  for (const auto& [name, value] : env) {
    CheckEnvName(name);
    spec.requests.push_back(
        {Cat("environment variable '", name,
             "' (its sshd accepts only the names listed in AcceptEnv; pass it as a secret)"),
         [name = name, value = value](ssh_channel ch) {
           return ssh_channel_request_env(ch, name.c_str(), value.c_str());
         }});
  }
  if (cmd.line.empty()) {
    spec.requests.push_back(
        {"shell request", [](ssh_channel ch) { return ssh_channel_request_shell(ch); }});
  } else {
    spec.requests.push_back({"exec request", [line = cmd.line](ssh_channel ch) {
                               return ssh_channel_request_exec(ch, line.c_str());
                             }});
  }
  return spec;
}

ScopedIgnoreSignal::ScopedIgnoreSignal(int sig) : sig_(sig) {
  struct sigaction ignore {};
  ignore.sa_handler = SIG_IGN;
  sigemptyset(&ignore.sa_mask);
  ::sigaction(sig_, &ignore, &old_);
}

ScopedIgnoreSignal::~ScopedIgnoreSignal() { ::sigaction(sig_, &old_, nullptr); }

}  // namespace ss::ssh_detail
