#include "ssh_command.hpp"

#include <signal.h>

#include <algorithm>
#include <cstdio>

#include "error.hpp"
#include "shell_quote.hpp"
#include "strings.hpp"

namespace ss {
namespace {

bool Plain(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("_./:@+,=-").find(static_cast<char>(c)) != std::string_view::npos;
}

// `cd` into the remote directory, "~" meaning the remote home.
std::string CdWord(const std::string& cwd) {
  if (cwd == "~") return "cd -- \"$HOME\"";
  if (cwd.rfind("~/", 0) == 0) return Cat("cd -- \"$HOME\"/", ShellQuote(cwd.substr(2)));
  return Cat("cd -- ", ShellQuote(cwd));
}

// Reads the preamble (see EncodeSecrets) and exports each variable. Constant text: the values
// only ever pass through the shell's read and printf builtins.
constexpr const char* kReadSecrets =
    "while IFS= read -r ss_l && [ -n \"$ss_l\" ]; do"
    " ss_v=$(printf '%bx' \"${ss_l#*=}\") && export \"${ss_l%%=*}=${ss_v%x}\"; done;"
    " unset ss_l ss_v";

// A line of POSIX shell syntax, run by /bin/sh whatever the login shell is (fish reads the
// quoted word the same way; it would not read the line itself).
std::string UnderSh(const std::string& script) {
  return Cat("exec /bin/sh -c ", ShellQuote(script));
}

// Prints a marker without the marker's text appearing in the command line (a shell tracing its
// commands must not be mistaken for the marker).
std::string PrintMarker(std::string_view prefix, std::string_view nonce) {
  return Cat("printf '%s%s' ", ShellQuote(prefix), " ", ShellQuote(nonce));
}

}  // namespace

void CheckEnvName(std::string_view name) {
  bool ok = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
  for (char c : name) {
    ok = ok &&
         ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  }
  if (!ok) {
    throw Error(kExitDataErr, Cat("invalid environment variable name '", name, "'"), {},
                {"names are letters, digits and '_', not starting with a digit"});
  }
}

std::string EncodeSecrets(const EnvList& secrets) {
  std::string out;
  for (const auto& [name, value] : secrets) {
    CheckEnvName(name);
    if (value.find('\0') != std::string::npos) {
      throw Error(kExitDataErr, Cat("the value of ", name, " contains a NUL byte"));
    }
    out += name;
    out += '=';
    for (unsigned char c : value) {
      if (Plain(c)) {
        out += static_cast<char>(c);
      } else {
        char buf[8];
        std::snprintf(buf, sizeof buf, "\\0%03o", c);
        out += buf;
      }
    }
    out += '\n';
  }
  out += '\n';
  return out;
}

RemoteCommand BuildRemoteCommand(const std::vector<std::string>& argv, const std::string& cwd,
                                 const EnvList& secrets, bool pty, std::string_view nonce) {
  RemoteCommand cmd;
  for (const auto& [name, value] : secrets) CheckEnvName(name);
  if (argv.empty() && cwd.empty() && secrets.empty()) return cmd;  // a plain login shell

  // A command alone is quoted words, which every login shell reads alike; anything more is
  // POSIX syntax, run under /bin/sh.
  if (cwd.empty() && secrets.empty()) {
    cmd.line = ShellJoin(argv);
    return cmd;
  }
  std::string run = argv.empty() ? "exec \"${SHELL:-/bin/sh}\" -l" : ShellJoin(argv);
  if (!cwd.empty()) run = Cat(CdWord(cwd), " && ", run);
  if (secrets.empty()) {
    cmd.line = UnderSh(run);
    return cmd;
  }
  cmd.preamble = EncodeSecrets(secrets);
  if (!pty) {
    cmd.line = UnderSh(Cat(kReadSecrets, "; ", run));
    return cmd;
  }
  cmd.ready_marker = Cat("ss-secrets-ready-", nonce);
  cmd.done_marker = Cat("ss-secrets-done-", nonce);
  cmd.line = UnderSh(Cat("ss_t=$(stty -g 2>/dev/null); stty -echo -icanon 2>/dev/null; ",
                         PrintMarker("ss-secrets-ready-", nonce), "; ", kReadSecrets,
                         "; [ -z \"$ss_t\" ] || stty \"$ss_t\"; unset ss_t; ",
                         PrintMarker("ss-secrets-done-", nonce), "; ", run));
  return cmd;
}

namespace {

struct NamedSignal {
  int number;
  const char* name;
};
constexpr NamedSignal kSignals[] = {
    {SIGHUP, "HUP"},   {SIGINT, "INT"},   {SIGQUIT, "QUIT"}, {SIGILL, "ILL"},   {SIGABRT, "ABRT"},
    {SIGFPE, "FPE"},   {SIGKILL, "KILL"}, {SIGSEGV, "SEGV"}, {SIGPIPE, "PIPE"}, {SIGALRM, "ALRM"},
    {SIGTERM, "TERM"}, {SIGUSR1, "USR1"}, {SIGUSR2, "USR2"}, {SIGBUS, "BUS"},
};

}  // namespace

const char* SignalName(int sig) {
  for (const auto& s : kSignals) {
    if (s.number == sig) return s.name;
  }
  return nullptr;
}

int SignalNumber(std::string_view name) {
  for (const auto& s : kSignals) {
    if (name == s.name) return s.number;
  }
  return 0;
}

int RemoteExitStatus(int exit_status, std::string_view exit_signal) {
  if (exit_status >= 0) return exit_status & 0xff;
  int sig = SignalNumber(exit_signal);
  return sig > 0 ? 128 + sig : 255;
}

MarkerFilter::MarkerFilter(std::string ready, std::string done)
    : ready_(std::move(ready)), done_(std::move(done)) {}

std::string MarkerFilter::Feed(std::string_view data) {
  std::string out;
  held_.append(data);
  while (true) {
    if (state_ == kPassing) {
      out += held_;
      held_.clear();
      return out;
    }
    const std::string& marker = state_ == kBeforeReady ? ready_ : done_;
    size_t pos = held_.find(marker);
    if (pos != std::string::npos) {
      if (state_ == kBeforeReady) out.append(held_, 0, pos);
      held_.erase(0, pos + marker.size());
      state_ = state_ == kBeforeReady ? kHiding : kPassing;
      continue;
    }
    // Hold back the longest tail that could still become the marker.
    size_t keep = 0;
    for (size_t k = std::min(marker.size() - 1, held_.size()); k > 0; --k) {
      if (held_.compare(held_.size() - k, k, marker, 0, k) == 0) {
        keep = k;
        break;
      }
    }
    if (state_ == kBeforeReady) out.append(held_, 0, held_.size() - keep);
    held_.erase(0, held_.size() - keep);
    return out;
  }
}

std::string MarkerFilter::Flush() {
  std::string out = state_ == kHiding ? std::string() : held_;
  held_.clear();
  return out;
}

}  // namespace ss
