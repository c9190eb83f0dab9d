// One-shot and streamed commands (no PTY) on an SshConnection.
#include <libssh/libssh.h>
#include <signal.h>

#include <algorithm>
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

namespace {

// Passes output on until `limit` bytes. Past it, with `over`: fails (which closes the channel)
// and says so there; without: takes the rest in and drops it (a command's stderr, read for
// messages only, never grows past that on the host whatever the other side sends).
class CappedSink : public ssh_detail::Sink {
 public:
  CappedSink(std::shared_ptr<ssh_detail::Sink> inner, int64_t limit, std::shared_ptr<bool> over)
      : inner_(std::move(inner)), left_(limit), over_(std::move(over)) {}
  long Write(const char* data, size_t n) override {
    if (static_cast<int64_t>(n) > left_) {
      if (over_) {
        *over_ = true;
        return ssh_detail::kFailed;
      }
      if (left_ <= 0) return static_cast<long>(n);
      n = static_cast<size_t>(left_);
    }
    long put = inner_->Write(data, n);
    if (put > 0) left_ -= put;
    return put;
  }
  void WaitWritable(ssh_detail::Ready ready) override { inner_->WaitWritable(std::move(ready)); }
  void Finish() override { inner_->Finish(); }

 private:
  std::shared_ptr<ssh_detail::Sink> inner_;
  int64_t left_;
  std::shared_ptr<bool> over_;
};

// What is kept of a command's stderr; and of its stdout when the caller sets no bound, the most
// it may send before the command is stopped and the call fails (never silently cut).
constexpr int64_t kKeptErr = 1 << 20;
constexpr int64_t kDefaultMaxOutput = int64_t{512} << 20;

std::shared_ptr<ssh_detail::Sink> Limited(std::shared_ptr<ssh_detail::Sink> sink, int64_t limit,
                                          std::shared_ptr<bool> over) {
  if (limit < 0) return sink;
  if (!over) over = std::make_shared<bool>(false);
  return std::make_shared<CappedSink>(std::move(sink), limit, std::move(over));
}

}  // namespace

void SshChannel::Close() {
  if (auto c = channel_.lock()) c->Close();
}

bool SshChannel::SendSignal(int sig) {
  auto c = channel_.lock();
  const char* name = SignalName(sig);
  return c && name && c->SendSignal(name);
}

bool SshChannel::running() const {
  auto c = channel_.lock();
  return c && !c->done();
}

SshChannel SshConnection::ExecAsync(const std::vector<std::string>& argv,
                                    const ExecOptions& options,
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
  auto over = std::make_shared<bool>(false);
  spec.out = Limited(out, options.max_output < 0 ? kDefaultMaxOutput : options.max_output, over);
  spec.err = std::make_shared<CappedSink>(err, kKeptErr, nullptr);
  spec.on_end = [out, err, over, done = std::move(done)](const ChannelEnd& end) {
    ExecResult r;
    r.status = RemoteExitStatus(end.exit_status, end.exit_signal);
    r.exit_signal = end.exit_signal;
    r.out = std::move(out->text);
    r.err = std::move(err->text);
    r.over_limit = *over;
    done(std::move(r), end.error);
  };
  return SshChannel(mux_->Start(std::move(spec)));
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
    if (mux_->lost()) throw Error(kExitRemote, mux_->lost_message()).AsPlain();
    throw Error(kExitRemote, Cat("cannot run '", argv[0], "' in ", Subject()),
                {Cat("  ", state->error)});
  }
  if (state->result->over_limit && options.max_output < 0) {
    throw Error(kExitDataErr, Cat("'", argv[0], "' in ", Subject(), " printed more than ",
                                  kDefaultMaxOutput >> 20, " MiB; stopped there"));
  }
  return std::move(*state->result);
}

SshChannel SshConnection::ExecStreamAsync(const std::vector<std::string>& argv,
                                          const StreamOptions& options,
                                          std::function<void(int, std::string)> done) {
  if (argv.empty()) throw Error(kExitSoftware, "no command to run");
  RemoteCommand cmd = BuildRemoteCommand(argv, options.cwd, options.secret_env, false, {});
  asio::io_context& io = mux_->io();
  ChannelSpec spec = ssh_detail::SessionSpec(options.env, cmd, std::nullopt);
  std::vector<std::shared_ptr<Source>> parts;
  if (!cmd.preamble.empty()) parts.push_back(std::make_shared<StringSource>(cmd.preamble));
  if (options.in_fd >= 0) parts.push_back(std::make_shared<FdIo>(io, options.in_fd));
  if (!parts.empty()) spec.in = std::make_shared<ChainSource>(std::move(parts));
  if (options.out_fd >= 0) {
    spec.out = Limited(std::make_shared<FdIo>(io, options.out_fd), options.max_output,
                       options.out_over_limit);
  }
  if (options.err_fd >= 0) {
    spec.err = std::make_shared<FdIo>(io, options.err_fd);
    if (options.max_err >= 0)
      spec.err = std::make_shared<CappedSink>(spec.err, options.max_err, nullptr);
  }
  spec.on_end = [done = std::move(done), lost = mux_->lost_message()](const ChannelEnd& end) {
    if (!end.error.empty()) {
      done(kExitRemote, end.lost ? lost : end.error);
    } else if (end.output_failed && end.exit_status < 0) {
      done(128 + SIGPIPE, {});  // our reader went away first, as with a local pipeline
    } else {
      done(RemoteExitStatus(end.exit_status, end.exit_signal), {});
    }
  };
  return SshChannel(mux_->Start(std::move(spec)));
}

SshChannel SshConnection::ExecIo(const std::vector<std::string>& argv,
                                 std::shared_ptr<ssh_detail::Source> in,
                                 std::shared_ptr<ssh_detail::Sink> out,
                                 std::shared_ptr<ssh_detail::Sink> err,
                                 std::function<void(int, std::string)> done) {
  if (argv.empty()) throw Error(kExitSoftware, "no command to run");
  RemoteCommand cmd = BuildRemoteCommand(argv, "", {}, false, {});
  ChannelSpec spec = ssh_detail::SessionSpec({}, cmd, std::nullopt);
  spec.in = std::move(in);
  spec.out = std::move(out);
  spec.err = std::move(err);
  spec.on_end = [done = std::move(done), lost = mux_->lost_message()](const ChannelEnd& end) {
    if (!end.error.empty()) {
      done(kExitRemote, end.lost ? lost : end.error);
    } else {
      done(RemoteExitStatus(end.exit_status, end.exit_signal), {});
    }
  };
  return SshChannel(mux_->Start(std::move(spec)));
}

int SshConnection::ExecStream(const std::vector<std::string>& argv, const StreamOptions& options) {
  ssh_detail::ScopedIgnoreSignal no_sigpipe(SIGPIPE);  // a closed stdout is an error to handle
  std::vector<std::unique_ptr<FdFlagsGuard>> flags;
  for (int fd : {options.in_fd, options.out_fd, options.err_fd}) {
    if (fd >= 0) flags.push_back(std::make_unique<FdFlagsGuard>(fd));
  }
  struct State {
    std::optional<int> status;
    std::string error;
    int interrupted = 0;
    std::set<int> forwarded;
  };
  auto state = std::make_shared<State>();
  SshChannel channel = ExecStreamAsync(argv, options, [state](int status, std::string error) {
    state->status = status;
    state->error = std::move(error);
  });

  // The first SIGINT, SIGTERM or SIGHUP goes to the remote command; the same one again ends the
  // session from our side.
  asio::signal_set signals(mux_->io(), SIGINT, SIGTERM, SIGHUP);
  std::function<void()> arm = [&] {
    signals.async_wait([&](const asio::error_code& ec, int sig) {
      if (ec) return;
      if (state->forwarded.count(sig) || !channel.SendSignal(sig)) {
        state->interrupted = sig;
        channel.Close();
        return;
      }
      state->forwarded.insert(sig);
      arm();
    });
  };
  arm();
  mux_->RunUntil([&] { return state->status.has_value(); });
  signals.cancel();

  if (state->interrupted) {
    throw Error(128 + state->interrupted,
                Cat("interrupted: SIG", SignalName(state->interrupted), " twice"));
  }
  if (!state->error.empty()) {
    if (mux_->lost()) throw Error(kExitRemote, state->error).AsPlain();
    throw Error(kExitRemote, Cat("cannot run '", argv[0], "' in ", Subject()),
                {Cat("  ", state->error)});
  }
  return *state->status;
}

}  // namespace ss
