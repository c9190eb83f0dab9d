// Running other programs: always an argv vector, never a shell command line.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace ss {

struct ProcessOptions {
  // Bytes written to the child's stdin (then closed). Without it stdin is /dev/null, unless
  // inherit_stdin is set.
  std::optional<std::string> input;
  bool inherit_stdin = false;
  // Captured into the result, or else inherited from us.
  bool capture_stdout = true;
  bool capture_stderr = true;
  // Environment changes on top of ours.
  std::vector<std::pair<std::string, std::string>> env;
  std::vector<std::string> unset_env;
  // When set, only these of our variables pass to the child (before `env` is applied).
  std::optional<std::vector<std::string>> only_env;
  std::string cwd;
  // Sent SIGTERM at the deadline and SIGKILL 2 s later.
  std::optional<std::chrono::milliseconds> timeout;
  // Start the child in a new session (setsid): a daemon that outlives us and our terminal.
  bool new_session = false;
  // Descriptors handed to the child: {descriptor here, number in the child}.
  std::vector<std::pair<int, int>> pass_fds;
  // argv[0] is none of the host's programs (lib/packages.tsv lists those, and nothing else is
  // run without this): one of ss's own binaries, a program of the image being built, or one the
  // user chose.
  bool unlisted = false;
};

// The variables a long-lived process of ss's own (ss-net, the shared connection) is started
// with: what ss itself reads (its paths, the engines' sockets, locale, sudo's user, debugging),
// and none of the user's others, which may be secrets it would hold for hours.
std::vector<std::string> DaemonEnvNames();

struct ProcessResult {
  int status = 0;  // exit status, or 128 + signal number
  bool timed_out = false;
  std::string out;
  std::string err;
  bool ok() const { return status == 0 && !timed_out; }
};

// Runs argv[0] (looked up on PATH when it has no slash) and waits for it. Throws ss::Error
// (exit 69) when the program cannot be started at all.
ProcessResult Run(const std::vector<std::string>& argv, const ProcessOptions& options = {});

// Like Run, but a non-zero status throws ss::Error(code) naming `what` and the last lines of
// the child's stderr. Returns stdout.
std::string RunChecked(const std::vector<std::string>& argv, std::string_view what,
                       const ProcessOptions& options = {}, int code = 70);

// Starts argv without waiting; stdin from /dev/null, stdout and stderr appended to log_path
// (or /dev/null when empty). The caller owns the child and must wait for it.
pid_t Spawn(const std::vector<std::string>& argv, const std::string& log_path = {},
            const ProcessOptions& options = {});

// Waits for pid; returns the exit status (or 128 + signal).
int WaitPid(pid_t pid);

// Whether pid still names a live process: a zombie waiting for its parent (or for an init that
// reaps slowly) to collect it has ended, and does not count.
bool ProcessAlive(pid_t pid);
// Whether `pid` is alive and is `argv_prefix` (its program by file name, then its first
// arguments) run with "--sandbox SANDBOX": a daemon ss started for that sandbox, still that one
// (a recorded number may be another process's by now).
bool IsSandboxDaemon(pid_t pid, const std::vector<std::string>& argv_prefix,
                     const std::string& sandbox);
// Waits until pid has ended, at most `wait`; true when it has.
bool WaitProcessGone(pid_t pid, std::chrono::milliseconds wait);

// Replaces this process with argv (path must contain a slash); only returns by throwing.
[[noreturn]] void ExecPath(const std::string& path, const std::vector<std::string>& argv);

// The first executable named `name` on PATH.
std::optional<std::string> FindInPath(std::string_view name);

}  // namespace ss
