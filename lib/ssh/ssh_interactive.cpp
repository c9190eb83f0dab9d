// The interactive PTY session of an SshConnection.
#include <libssh/libssh.h>
#include <signal.h>
#include <unistd.h>

#include <asio/signal_set.hpp>
#include <cstdlib>
#include <optional>

#include "digest.hpp"
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
using ssh_detail::GatedSource;
using ssh_detail::MarkerSink;
using ssh_detail::Sink;
using ssh_detail::StringSource;

namespace {

WindowSize SizeOf(int out_fd, int in_fd) {
  if (auto size = TerminalSize(out_fd)) return *size;
  if (auto size = TerminalSize(in_fd)) return *size;
  return WindowSize{};
}

}  // namespace

int SshConnection::RunInteractive(const InteractiveOptions& options) {
  RemoteCommand cmd =
      BuildRemoteCommand(options.argv, options.cwd, options.secret_env, true, RandomNonce());
  ssh_detail::PtyRequest pty;
  pty.term = options.term;
  if (pty.term.empty()) {
    const char* term = std::getenv("TERM");
    pty.term = term && *term ? term : "xterm-256color";
  }
  pty.size = SizeOf(options.out_fd, options.in_fd);

  ssh_detail::ScopedIgnoreSignal no_sigpipe(SIGPIPE);
  FdFlagsGuard in_flags(options.in_fd), out_flags(options.out_fd), err_flags(STDERR_FILENO);
  std::optional<RawTerminal> raw;
  asio::io_context& io = mux_->io();
  struct State {
    bool done = false;
    ChannelEnd end;
    int interrupted = 0;
  };
  auto state = std::make_shared<State>();

  ChannelSpec spec = ssh_detail::SessionSpec(options.env, cmd, pty);
  auto keys = std::make_shared<FdIo>(io, options.in_fd);
  std::shared_ptr<Sink> screen = std::make_shared<FdIo>(io, options.out_fd);
  if (cmd.preamble.empty()) {
    spec.in = keys;
  } else {
    // Secrets: sent once the remote side has turned echo off (ready marker); keys only once it
    // has read them and restored the terminal (done marker). The markers never reach the screen.
    auto secrets = std::make_shared<GatedSource>(std::make_shared<StringSource>(cmd.preamble));
    auto gated_keys = std::make_shared<GatedSource>(keys);
    spec.in = std::make_shared<ChainSource>(
        std::vector<std::shared_ptr<ssh_detail::Source>>{secrets, gated_keys});
    screen = std::make_shared<MarkerSink>(
        screen, MarkerFilter(cmd.ready_marker, cmd.done_marker), [secrets] { secrets->Open(); },
        [gated_keys] { gated_keys->Open(); });
  }
  spec.out = screen;
  spec.err = std::make_shared<FdIo>(io, STDERR_FILENO);
  spec.on_end = [state](const ChannelEnd& end) {
    state->end = end;
    state->done = true;
  };

  asio::signal_set signals(io, SIGINT, SIGTERM, SIGHUP);
  signals.add(SIGWINCH);
  // Raw before the channel starts: what the command prints first may arrive with the reply to
  // its start, and a terminal still in cooked mode would add a second carriage return to it.
  raw.emplace(options.in_fd);
  auto channel = mux_->Start(std::move(spec));
  std::function<void()> arm = [&] {
    signals.async_wait([&](const asio::error_code& ec, int sig) {
      if (ec) return;
      if (sig == SIGWINCH) {
        WindowSize size = SizeOf(options.out_fd, options.in_fd);
        channel->ChangePtySize(size.cols, size.rows);
        arm();
        return;
      }
      state->interrupted = sig;
      channel->Close();
    });
  };
  arm();
  mux_->RunUntil([&] { return state->done; });
  signals.cancel();
  raw.reset();  // before any message

  if (state->interrupted) {
    throw Error(128 + state->interrupted,
                Cat("session with ", Subject(), " ended by SIG", SignalName(state->interrupted)));
  }
  if (!state->end.error.empty()) {
    if (state->end.lost) throw Error(kExitRemote, mux_->lost_message()).AsPlain();
    throw Error(kExitRemote, Cat("cannot start a session in ", Subject()),
                {Cat("  ", state->end.error)});
  }
  return RemoteExitStatus(state->end.exit_status, state->end.exit_signal);
}

}  // namespace ss
