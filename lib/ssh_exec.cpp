// One-shot and streamed commands (no PTY) on an SshConnection.
#include <libssh/libssh.h>
#include <signal.h>

#include <asio/signal_set.hpp>
#include <optional>
#include <set>

#include "error.hpp"
#include "ssh.hpp"
#include "ssh_mux.hpp"
#include "ssh_session_spec.hpp"
#include "strings.hpp"
#include "terminal.hpp"

namespace ss {

using ssh_detail::ChainSource;
using ssh_detail::ChannelEnd;
using ssh_detail::ChannelSpec;
using ssh_detail::FdIo;
using ssh_detail::Source;
using ssh_detail::StringSink;
using ssh_detail::StringSource;

void SshConnection::ExecAsync(const std::vector<std::string>& argv, const ExecOptions& options,
                              std::function<void(ExecResult, std::string)> done) {
  if (argv.empty()) throw Error(kExitSoftware, "no command to run");
  RemoteCommand cmd = BuildRemoteCommand(argv, options.cwd, options.secret_env, false, {});
  auto out = std::make_shared<StringSink>();
  auto err = std::make_shared<StringSink>();
  ChannelSpec spec = ssh_detail::SessionSpec(options.env, cmd, std::nullopt);
  std::vector<std::shared_ptr<Source>> parts;
  if (!cmd.preamble.empty()) parts.push_back(std::make_shared<StringSource>(cmd.preamble));
  if (options.input) parts.push_back(std::make_shared<StringSource>(*options.input));
  if (!parts.empty()) spec.in = std::make_shared<ChainSource>(std::move(parts));
  spec.out = out;
  spec.err = err;
  spec.on_end = [out, err, done = std::move(done)](const ChannelEnd& end) {
    ExecResult r;
    r.status = RemoteExitStatus(end.exit_status, end.exit_signal);
    r.exit_signal = end.exit_signal;
    r.out = std::move(out->text);
    r.err = std::move(err->text);
    done(std::move(r), end.error);
  };
  mux_->Start(std::move(spec));
}

ExecResult SshConnection::Exec(const std::vector<std::string>& argv, const ExecOptions& options) {
  struct State {
    std::optional<ExecResult> result;
    std::string error;
  };
  auto state = std::make_shared<State>();
  ExecAsync(argv, options, [state](ExecResult r, std::string error) {
    state->result = std::move(r);
    state->error = std::move(error);
  });
  mux_->RunUntil([&] { return state->result.has_value(); });
  if (!state->error.empty()) {
    if (mux_->lost()) throw Error(kExitRemote, mux_->lost_message());
    throw Error(kExitRemote, Cat("cannot run '", argv[0], "' in ", Subject()),
                {Cat("  ", state->error)});
  }
  return std::move(*state->result);
}

int SshConnection::ExecStream(const std::vector<std::string>& argv, const StreamOptions& options) {
  if (argv.empty()) throw Error(kExitSoftware, "no command to run");
  RemoteCommand cmd = BuildRemoteCommand(argv, options.cwd, options.secret_env, false, {});
  ssh_detail::ScopedIgnoreSignal no_sigpipe(SIGPIPE);  // a closed stdout is an error to handle
  std::vector<std::unique_ptr<FdFlagsGuard>> flags;
  for (int fd : {options.in_fd, options.out_fd, options.err_fd}) {
    if (fd >= 0) flags.push_back(std::make_unique<FdFlagsGuard>(fd));
  }
  asio::io_context& io = mux_->io();
  struct State {
    bool done = false;
    ChannelEnd end;
    int interrupted = 0;
    std::set<int> forwarded;
  };
  auto state = std::make_shared<State>();

  ChannelSpec spec = ssh_detail::SessionSpec(options.env, cmd, std::nullopt);
  std::vector<std::shared_ptr<Source>> parts;
  if (!cmd.preamble.empty()) parts.push_back(std::make_shared<StringSource>(cmd.preamble));
  if (options.in_fd >= 0) parts.push_back(std::make_shared<FdIo>(io, options.in_fd));
  if (!parts.empty()) spec.in = std::make_shared<ChainSource>(std::move(parts));
  spec.out = std::make_shared<FdIo>(io, options.out_fd);
  spec.err = std::make_shared<FdIo>(io, options.err_fd);
  spec.on_end = [state](const ChannelEnd& end) {
    state->end = end;
    state->done = true;
  };
  auto channel = mux_->Start(std::move(spec));

  // The first SIGINT, SIGTERM or SIGHUP goes to the remote command; the same one again ends the
  // session from our side.
  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  std::function<void()> arm = [&] {
    signals.async_wait([&](const asio::error_code& ec, int sig) {
      if (ec) return;
      if (state->forwarded.count(sig) || !channel->SendSignal(SignalName(sig))) {
        state->interrupted = sig;
        channel->Close();
        return;
      }
      state->forwarded.insert(sig);
      arm();
    });
  };
  arm();
  mux_->RunUntil([&] { return state->done; });
  signals.cancel();

  if (state->interrupted) {
    throw Error(128 + state->interrupted,
                Cat("interrupted: SIG", SignalName(state->interrupted), " twice"));
  }
  if (!state->end.error.empty()) {
    if (state->end.lost) throw Error(kExitRemote, mux_->lost_message());
    throw Error(kExitRemote, Cat("cannot run '", argv[0], "' in ", Subject()),
                {Cat("  ", state->end.error)});
  }
  if (state->end.output_failed && state->end.exit_status < 0) return 128 + SIGPIPE;
  return RemoteExitStatus(state->end.exit_status, state->end.exit_signal);
}

}  // namespace ss
