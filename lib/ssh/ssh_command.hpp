// Remote command lines: the one place a remote shell parses text. An SSH exec request is a single
// string that the sandbox user's login shell runs (bash, or fish), so every variable word goes
// through ShellQuote(), which both read alike, and the scripts below are constants in POSIX
// syntax that the line hands to /bin/sh.
//
// Secrets (environment variables that must appear neither in any argv nor on the sandbox's disk)
// cannot use the SSH "env" request with a stock sshd (AcceptEnv allows only LANG and LC_* on
// Debian), and putting them in the command line would show them in `ps`. They travel on the
// channel's stdin instead, ahead of everything else: a small constant script in the user's shell
// reads one NAME=VALUE line per variable with the `read` builtin (byte by byte, so it never eats
// the command's own input), decodes the value with the printf builtin and exports it, then runs
// the command, which inherits them. With a PTY, stdin is the terminal: the script turns echo and
// canonical mode off first, says so with a marker on stdout, and only then are the secrets sent
// (the terminal would echo them otherwise); a second marker ends the hidden part of the output.
#pragma once

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ss {

using EnvList = std::vector<std::pair<std::string, std::string>>;

// Throws ss::Error(65) unless `name` is a portable variable name: [A-Za-z_][A-Za-z0-9_]*.
void CheckEnvName(std::string_view name);

struct RemoteCommand {
  // The exec request. Empty: run the login shell with a "shell" request instead.
  std::string line;
  // Bytes to send on stdin before any other input (the encoded secrets), or empty.
  std::string preamble;
  // PTY with secrets: send the preamble once `ready_marker` has appeared on stdout, and hide the
  // output from it up to `done_marker`. Empty without a PTY or without secrets.
  std::string ready_marker;
  std::string done_marker;
};

// `argv` is the command (empty: the user's login shell); `cwd` the remote directory ("~" and
// "~/x" are relative to the remote home; empty: the home). `nonce` makes the PTY markers unique.
RemoteCommand BuildRemoteCommand(const std::vector<std::string>& argv, const std::string& cwd,
                                 const EnvList& secrets, bool pty, std::string_view nonce);

// The preamble: one "NAME=VALUE" line per variable, each value byte outside [A-Za-z0-9_./:@+,=-]
// written as \0ooo (as printf's %b reads it), then an empty line.
std::string EncodeSecrets(const EnvList& secrets);

// The status a shell would report for a remote command: its exit status, 128 + N when it was
// killed by signal N ("TERM"), 255 when the server sent neither (as ssh(1) does).
int RemoteExitStatus(int exit_status, std::string_view exit_signal);
// Signal names as SSH uses them ("INT" for SIGINT); nullptr / 0 when unknown.
const char* SignalName(int sig);
int SignalNumber(std::string_view name);

// Hides the secret hand-shake from PTY output. Feed() returns the bytes to show: everything
// before the ready marker, nothing from it through the done marker, everything after. A few bytes
// that could start a marker are held back until they can be decided (or Flush()).
class MarkerFilter {
 public:
  MarkerFilter(std::string ready, std::string done);
  std::string Feed(std::string_view data);
  std::string Flush();
  bool ready_seen() const { return state_ != kBeforeReady; }
  bool done_seen() const { return state_ == kPassing; }

 private:
  enum State { kBeforeReady, kHiding, kPassing };
  State state_ = kBeforeReady;
  std::string ready_;
  std::string done_;
  std::string held_;
};

}  // namespace ss
