// SSH to a sandbox with libssh: one connection carries one-shot commands, streamed commands, an
// interactive PTY session and forwards, all at the same time, driven by one Asio event loop on
// the calling thread. The SSH layer knows nothing of backends or projects: it gets an endpoint.
//
// Trust: the host key is checked only against the endpoint's known_hosts file, which provisioning
// wrote (see ssh_keys.hpp). An unknown or changed key is refused with exit status 77; ss never
// accepts a key on first use and never writes known_hosts from a connection. Authentication is by
// the endpoint's key file only: no password, no agent, no ~/.ssh/config.
//
// Errors: ss::Error with 69 when the sandbox cannot be reached, 77 for host key and
// authentication refusals, and 255 for failures once connected ("connection to sandbox 'x'
// lost"), as ssh(1) does.
//
// Threading: an SshConnection and everything on it belong to one thread. The calls that run the
// loop (Exec, ExecStream, RunInteractive, Run) serve every channel and forward of the connection
// while they run. Only Stop() may be called from another thread.
#pragma once

#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "error.hpp"
#include "ssh_command.hpp"

namespace asio {
class io_context;
}

namespace ss {

struct SshEndpoint {
  std::string host;
  int port = 22;
  std::string user = "sandbox";
  std::string identity_file;     // private key (OpenSSH format)
  std::string known_hosts_file;  // the only source of trusted host keys
  // A second, read-only source for destinations other than sandboxes (ssh's
  // /etc/ssh/ssh_known_hosts); empty: none.
  std::string global_known_hosts_file;
};

struct SshOptions {
  // The sandbox's name for messages: "connection to sandbox 'NAME' lost". Without it the
  // messages name user@host:port.
  std::string name;
  std::chrono::milliseconds connect_timeout{10000};  // TCP connect and each blocking step
  // Above zero: the TCP connection alone must be made within it (a stopped machine is known at
  // once), and `connect_timeout` then bounds each step after it (a slow machine's sshd may take
  // seconds to greet and exchange keys).
  std::chrono::milliseconds tcp_timeout{0};
  std::chrono::seconds keepalive_interval{15};  // 0: none
  int keepalive_count_max = 3;  // intervals without a byte from the server before "lost"
};

struct ExecOptions {
  // Bytes for the command's stdin, then end of input. Without it stdin is empty.
  std::optional<std::string> input;
  // Sent with SSH "env" requests; sshd accepts only the names in its AcceptEnv (Debian: LANG
  // LC_*), and a refusal is an error.
  EnvList env;
  // Exported to the command through its stdin ahead of the input: never in any argv, never on
  // the sandbox's disk (see ssh_command.hpp). Works with a stock sshd and a POSIX login shell.
  EnvList secret_env;
  // Remote working directory ("~/x" is relative to the home); empty: the home.
  std::string cwd;
  // The most stdout may bring: past it the channel is closed and the result says so
  // (over_limit). Negative: 512 MiB, past which Exec throws ss::Error (65) rather than return
  // a cut output. Of stderr the first MiB is kept, the rest read and dropped.
  int64_t max_output = -1;
};

struct ExecResult {
  int status = 0;           // exit status; 128 + N when killed by signal N; 255 when none came
  std::string exit_signal;  // "TERM" when killed by a signal
  std::string out;
  std::string err;
  bool over_limit = false;  // stopped at ExecOptions::max_output; out or err is cut there
};

struct StreamOptions {
  EnvList env;
  EnvList secret_env;
  std::string cwd;
  int in_fd = 0;  // -1: no input
  int out_fd = 1;
  int err_fd = 2;
  // The most stdout may bring: past it the channel is closed and *out_over_limit set (when
  // given). Negative: no limit.
  int64_t max_output = -1;
  std::shared_ptr<bool> out_over_limit;
  // The most of stderr written to err_fd; the rest is read and dropped. Negative: all of it.
  int64_t max_err = -1;
};

struct InteractiveOptions {
  std::vector<std::string> argv;  // empty: the user's login shell
  std::string term;               // empty: $TERM, else xterm-256color
  EnvList env;
  EnvList secret_env;
  std::string cwd;
  int in_fd = 0;  // the terminal
  int out_fd = 1;
};

// Where a forwarded connection goes, or where a forward listens: a unix socket when
// `socket_path` is set, else TCP host:port.
struct SocketAddress {
  std::string host = "127.0.0.1";
  int port = 0;
  std::string socket_path;
  std::string Describe() const;  // "127.0.0.1:80" or "/path/to.sock"
};

struct ForwardInfo {
  int id = 0;
  SocketAddress bound;  // where it listens (with the port chosen when 0 was asked)
};

// Chooses, for each connection a remote forward receives, where on the host it goes; nullopt
// refuses the connection. Called on the loop's thread.
using TargetChooser = std::function<std::optional<SocketAddress>()>;

namespace ssh_detail {
class Mux;
class Channel;
class Source;
class Sink;
}  // namespace ssh_detail

// A command started without waiting for it (ExecAsync, ExecStreamAsync). Copyable; harmless
// once the command has ended.
class SshChannel {
 public:
  SshChannel() = default;
  explicit SshChannel(std::weak_ptr<ssh_detail::Channel> channel) : channel_(std::move(channel)) {}
  // Closes the channel now: the remote command loses its stdin and stdout.
  void Close();
  // Sends SIGNAL to the remote command (sshd honours it for users other than root).
  bool SendSignal(int sig);
  bool running() const;

 private:
  std::weak_ptr<ssh_detail::Channel> channel_;
};

// The server (its host key verified) refused the client key: on a first boot, possibly only
// until provisioning has written it.
class AuthRefused : public Error {
 public:
  using Error::Error;
};

class SshConnection {
 public:
  // Connects, checks the host key and authenticates; throws ss::Error (69, 77) on failure.
  SshConnection(SshEndpoint endpoint, SshOptions options = {});
  ~SshConnection();
  SshConnection(const SshConnection&) = delete;
  SshConnection& operator=(const SshConnection&) = delete;

  const SshEndpoint& endpoint() const;
  // "sandbox 'x'", or "'user@host:port'" without a name: the subject of messages.
  std::string Subject() const;

  // Runs argv (quoted with ShellQuote for the remote shell: argv arrives exactly, any bytes) and
  // collects its output. Throws ss::Error(255) when the command cannot be run or the connection
  // is lost. One round trip for the channel and one for the exec request: the figure to measure
  // for `exec true` on a held connection.
  ExecResult Exec(const std::vector<std::string>& argv, const ExecOptions& options = {});
  // The same without waiting: `done` is called on the loop's thread (with an error message when
  // the command could not be run) while one of the running calls below runs the loop.
  SshChannel ExecAsync(const std::vector<std::string>& argv, const ExecOptions& options,
                       std::function<void(ExecResult, std::string error)> done);

  // Runs argv without a PTY, our stdin to its stdin, its stdout and stderr to ours, separately.
  // SIGINT, SIGTERM and SIGHUP are passed on to the remote command; the same signal a second
  // time closes the session (ss::Error with 128 + signal). Returns the remote exit status (141
  // when our stdout was closed); throws ss::Error(255) on our own failures.
  int ExecStream(const std::vector<std::string>& argv, const StreamOptions& options = {});
  // Without waiting and without signal handling: the command's stdin comes from in_fd (any
  // descriptor: a pipe, a socket; -1 for none) and its stdout and stderr go to out_fd and
  // err_fd, until the command ends or Close(); `done` gets its exit status (as ExecResult's), or
  // an error message. The descriptors are used through duplicates made non-blocking, which also
  // makes the originals non-blocking (they share the open file): see FdFlagsGuard.
  SshChannel ExecStreamAsync(const std::vector<std::string>& argv, const StreamOptions& options,
                             std::function<void(int status, std::string error)> done);

  // An interactive session with a PTY: the terminal in raw mode (restored on every way out),
  // window size at start and on SIGWINCH, TERM passed, keys (Ctrl-C included) go to the remote
  // side. Returns the remote exit status. SIGINT, SIGTERM or SIGHUP sent to us end the session:
  // ss::Error with 128 + signal. Connection lost: ss::Error(255).
  int RunInteractive(const InteractiveOptions& options = {});

  // -L: listens on `listen` (a loopback TCP port, 0 = any free one, or a unix socket path; a
  // stale socket file is replaced, a live one is an error) and sends each connection to `target`
  // in the sandbox (TCP with direct-tcpip, a unix socket with direct-streamlocal). Throws
  // ss::Error(69) when it cannot listen.
  ForwardInfo ForwardLocal(const SocketAddress& listen, const SocketAddress& target);
  // -R: asks the sandbox's sshd to listen on bind_host:port (port 0: a random free one, retried)
  // and sends each connection to the host address `choose` returns for it. Throws ss::Error(69)
  // when the sandbox refuses.
  ForwardInfo ForwardRemote(const std::string& bind_host, int port, TargetChooser choose);
  // Stops a forward (connections already made go on).
  void CancelForward(int id);

  // For extensions of the SSH layer (the remote unix-socket bridge): runs argv like
  // ExecStreamAsync, with the layer's own host-side objects (ssh_host_io.hpp) as its stdin, stdout
  // and stderr (null: none).
  SshChannel ExecIo(const std::vector<std::string>& argv, std::shared_ptr<ssh_detail::Source> in,
                    std::shared_ptr<ssh_detail::Sink> out, std::shared_ptr<ssh_detail::Sink> err,
                    std::function<void(int status, std::string error)> done);
  // For the same: a connection to the unix socket `remote_path` in the sandbox (direct-streamlocal)
  // with host-side objects as its input and output, closed once both directions have ended, as a
  // local forward's; `done` gets why it failed, or nothing.
  SshChannel OpenUnixIo(const std::string& remote_path, std::shared_ptr<ssh_detail::Source> in,
                        std::shared_ptr<ssh_detail::Sink> out,
                        std::function<void(const std::string& error)> done);

  // Runs the loop (forwards, ExecAsync commands) until Stop(); throws ss::Error(255) when the
  // connection is lost.
  void Run();
  // Runs the loop until done() is true (checked after each handler); throws like Run().
  void RunUntil(const std::function<bool()>& done);
  // Makes the current (or else the next) Run() return; callable from any thread. The other
  // calls that run the loop are not affected.
  void Stop();

  // Channels open now (sessions and forwarded connections).
  size_t ChannelCount() const;
  asio::io_context& io_context();

  struct Forwards;  // internal (ssh_forward.hpp)

 private:
  void PrimeForForwards();
  SshEndpoint endpoint_;
  SshOptions options_;
  struct SessionHandle;
  std::unique_ptr<SessionHandle> session_;
  std::unique_ptr<ssh_detail::Mux> mux_;
  std::unique_ptr<Forwards> forwards_;
};

}  // namespace ss
