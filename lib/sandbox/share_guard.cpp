#include "share_guard.hpp"

#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <map>
#include <thread>

#include "fd.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "sandbox.hpp"
#include "strings.hpp"
#include "timefmt.hpp"

namespace ss {
namespace {

std::string GuardDir(const std::string& sandbox) { return Cat(SandboxesDir(), "/", sandbox); }
std::string GuardLog(const std::string& sandbox) { return GuardDir(sandbox) + "/guard.log"; }
std::string GuardPidFile(const std::string& sandbox) { return GuardDir(sandbox) + "/guard.pid"; }
// How much of the log a session's end has shown: what the guard did between sessions (for what
// runs in the sandbox without one) is shown by the next.
std::string ShownFile(const std::string& sandbox) { return GuardDir(sandbox) + "/guard.shown"; }
// Up to when each host folder's host-executable files were named: "SECONDS.NANOSECONDS\tPATH".
std::string NamedFile(const std::string& sandbox) { return GuardDir(sandbox) + "/named"; }
// The user's repositories as the guard that started with the sandbox found them.
std::string KnownFile(const std::string& sandbox) { return GuardDir(sandbox) + "/guard.known"; }

// The pid of the sandbox's running guard: recorded, alive, and still its guard.
int RunningPid(const std::string& sandbox) {
  auto text = ReadFileIfExists(GuardPidFile(sandbox));
  auto pid = text ? ParseDecimal(Trim(*text)) : std::nullopt;
  if (!pid || !IsSandboxDaemon(static_cast<pid_t>(*pid), {"ss-project", "guard"}, sandbox)) {
    return 0;
  }
  return static_cast<int>(*pid);
}

}  // namespace

void EnsureShareGuard(const std::string& sandbox, const std::string& projects,
                      const std::vector<std::string>& folders, bool starting) {
  if (RunningPid(sandbox)) return;
  // A guard that was not stopped by ss (its pid is still recorded) ended while the sandbox ran:
  // its record of the user's repositories stays, and what the sandbox made meanwhile is set
  // aside by the next.
  bool ended = PathExists(GuardPidFile(sandbox));
  if (starting && !ended) ::unlink(KnownFile(sandbox).c_str());
  // A system that cannot watch folders (macOS, for now): they are looked at around sessions only,
  // as ss-project(1) says, without a guard that would fail at every session.
  {
    Fd probe(platform::OpenFolderWatch());
    if (!probe.ok() && errno == ENOSYS) return;
  }
  MakeDirs(GuardDir(sandbox), 0700);
  std::vector<std::string> argv = {Cat(ExecutableDir(), "/ss-project"), "guard", "--sandbox",
                                   sandbox};
  if (!projects.empty()) argv.insert(argv.end(), {"--projects", projects});
  for (const auto& folder : folders) argv.insert(argv.end(), {"--folder", folder});
  // Its log goes on from the last run's (a session's end reads what was added during it), begun
  // afresh when it grew big.
  if (ShareGuardLogSize(sandbox) > (1u << 20)) AtomicWrite(GuardLog(sandbox), "", 0600);
  ProcessOptions o;
  o.new_session = true;
  o.unlisted = true;
  o.only_env = DaemonEnvNames();
  size_t from = ShareGuardLogSize(sandbox);
  pid_t pid = Spawn(argv, GuardLog(sandbox), o);
  AtomicWrite(GuardPidFile(sandbox), Cat(pid, "\n"), 0600);
  // Ready once its first line is written (every folder watched). Before the sandbox starts it
  // is waited for however long that takes: what it finds then is taken for the user's, so the
  // sandbox must not run before it has looked everywhere. Started again beside a running
  // sandbox (which it then compares with the record), past 10 s it goes on behind the session.
  for (int i = 0;; ++i) {
    if (ShareGuardLogSize(sandbox) > from) {
      std::string said = ReadFileIfExists(GuardLog(sandbox)).value_or("").substr(from);
      if (said.find('\n') != std::string::npos) {
        if (ended) {
          Warn(Cat("the guard of the folders sandbox '", sandbox,
                   "' shares had stopped while it ran; started again, it sets aside what "
                   "appeared there meanwhile (",
                   DisplayPath(GuardLog(sandbox)), ")"));
        }
        return;
      }
    }
    int status = 0;
    if (::waitpid(pid, &status, WNOHANG) == pid) break;
    if (i == 400) {
      if (!starting) return;
      Note(Cat("Reading the folders sandbox '", sandbox,
               "' shares before it starts (many folders: this takes a while)..."));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  std::vector<std::string> said = ShareGuardSaid(sandbox, from);
  Warn(Cat("the shared folders of sandbox '", sandbox,
           "' are not watched: a repository it makes there is found only before and after each "
           "session",
           said.empty() ? "" : Cat(" (", said.back(), ")")));
}

bool ShareGuardRunning(const std::string& sandbox) { return RunningPid(sandbox) != 0; }

void StopShareGuard(const std::string& sandbox) {
  int pid = RunningPid(sandbox);
  if (pid) {
    ::kill(pid, SIGTERM);
    if (!WaitProcessGone(pid, std::chrono::seconds(5))) ::kill(pid, SIGKILL);
    // It watched until the sandbox stopped: the next guard starts with it, afresh. One that had
    // ended before leaves its record and its pid file (EnsureShareGuard).
    ::unlink(KnownFile(sandbox).c_str());
    ::unlink(GuardPidFile(sandbox).c_str());
  }
}

std::optional<std::set<std::string>> ShareGuardKnown(const std::string& sandbox) {
  auto text = ReadFileIfExists(KnownFile(sandbox));
  if (!text) return std::nullopt;
  auto lines = SplitLines(*text);
  return std::set<std::string>(lines.begin(), lines.end());
}

void ShareGuardRecordKnown(const std::string& sandbox, const std::set<std::string>& known) {
  std::string text;
  for (const auto& line : known) text += line + "\n";
  MakeDirs(GuardDir(sandbox), 0700);
  AtomicWrite(KnownFile(sandbox), text, 0600);
}

std::string ShareGuardLogPath(const std::string& sandbox) { return GuardLog(sandbox); }

size_t ShareGuardLogSize(const std::string& sandbox) {
  struct stat st;
  return ::stat(GuardLog(sandbox).c_str(), &st) == 0 ? static_cast<size_t>(st.st_size) : 0;
}

size_t ShareGuardShown(const std::string& sandbox) {
  auto shown = ParseDecimal(Trim(ReadFileIfExists(ShownFile(sandbox)).value_or("")));
  return shown && *shown > 0 ? static_cast<size_t>(*shown) : 0;
}

void ShareGuardMarkShown(const std::string& sandbox, size_t upto) {
  if (!IsDirectory(GuardDir(sandbox))) return;
  AtomicWrite(ShownFile(sandbox), Cat(upto, "\n"), 0600);
}

namespace {

std::map<std::string, struct timespec> ReadNamed(const std::string& sandbox) {
  std::map<std::string, struct timespec> marks;
  for (const auto& line : SplitLines(ReadFileIfExists(NamedFile(sandbox)).value_or(""))) {
    size_t tab = line.find('\t');
    if (tab == std::string::npos) continue;
    if (auto t = ParseTimespec(std::string_view(line).substr(0, tab)))
      marks[line.substr(tab + 1)] = *t;
  }
  return marks;
}

}  // namespace

std::optional<struct timespec> ShareNamedUntil(const std::string& sandbox,
                                               const std::string& folder) {
  auto marks = ReadNamed(sandbox);
  auto it = marks.find(folder);
  if (it == marks.end()) return std::nullopt;
  return it->second;
}

void ShareMarkNamed(const std::string& sandbox, const std::string& folder,
                    const struct timespec& until) {
  if (folder.find('\n') != std::string::npos || !IsDirectory(GuardDir(sandbox))) return;
  auto marks = ReadNamed(sandbox);
  marks[folder] = until;
  std::string text;
  for (const auto& [path, t] : marks) text += Cat(FormatTimespec(t), "\t", path, "\n");
  AtomicWrite(NamedFile(sandbox), text, 0600);
}

std::vector<std::string> ShareGuardSaid(const std::string& sandbox, size_t from) {
  std::string text = ReadFileIfExists(GuardLog(sandbox)).value_or("");
  if (from > text.size()) from = 0;  // a new log
  std::vector<std::string> lines;
  for (const auto& line : SplitLines(text.substr(from))) {
    if (!line.starts_with("watching ")) lines.push_back(Printable(line));
  }
  return lines;
}

bool ShareGuardCouldNot(const std::string& line) {
  return line.starts_with("cannot") || line.find("could not") != std::string::npos;
}

}  // namespace ss
