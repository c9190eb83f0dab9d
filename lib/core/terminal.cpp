#include "terminal.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cstdlib>

namespace ss {
namespace {

// Raw mode state shared with the fatal-signal handler and the atexit hook: plain data, written
// only while no handler can run it concurrently.
struct SavedTerminal {
  int fd = -1;
  termios modes{};
  volatile sig_atomic_t active = 0;
};
SavedTerminal g_saved;

constexpr int kFatalSignals[] = {SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT};
struct sigaction g_old_actions[sizeof kFatalSignals / sizeof kFatalSignals[0]];

void RestoreSaved(int when) {
  if (g_saved.active) {
    ::tcsetattr(g_saved.fd, when, &g_saved.modes);
    g_saved.active = 0;
  }
}

void OnFatalSignal(int sig) {
  RestoreSaved(TCSANOW);  // async-signal-safe
  // SA_RESETHAND put the default action back: raising again ends the process as it would have.
  ::raise(sig);
}

void AtExit() { RestoreSaved(TCSANOW); }

}  // namespace

std::optional<WindowSize> TerminalSize(int fd) {
  winsize ws{};
  if (::ioctl(fd, TIOCGWINSZ, &ws) != 0 || ws.ws_col == 0 || ws.ws_row == 0) return std::nullopt;
  return WindowSize{ws.ws_col, ws.ws_row};
}

RawTerminal::RawTerminal(int fd) {
  termios modes{};
  if (!::isatty(fd) || ::tcgetattr(fd, &modes) != 0 || g_saved.active) return;
  static bool hooked = [] { return std::atexit(AtExit) == 0; }();
  (void)hooked;
  g_saved.fd = fd;
  g_saved.modes = modes;
  g_saved.active = 1;
  owner_ = true;
  for (size_t i = 0; i < sizeof kFatalSignals / sizeof kFatalSignals[0]; ++i) {
    struct sigaction sa {};
    sa.sa_handler = OnFatalSignal;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND | SA_NODEFER;
    ::sigaction(kFatalSignals[i], &sa, &g_old_actions[i]);
  }
  termios raw = modes;
  raw.c_iflag |= IGNPAR;
  raw.c_iflag &= ~(ISTRIP | INLCR | IGNCR | ICRNL | IXON | IXANY | IXOFF | IUCLC);
  raw.c_lflag &= ~(ISIG | ICANON | ECHO | ECHOE | ECHOK | ECHONL | IEXTEN);
  raw.c_oflag &= ~OPOST;
  raw.c_cc[VMIN] = 1;
  raw.c_cc[VTIME] = 0;
  if (::tcsetattr(fd, TCSADRAIN, &raw) != 0) {
    Restore();
    return;
  }
  active_ = true;
}

RawTerminal::~RawTerminal() { Restore(); }

void RawTerminal::Restore() {
  active_ = false;
  if (!owner_) return;
  owner_ = false;
  RestoreSaved(TCSADRAIN);
  for (size_t i = 0; i < sizeof kFatalSignals / sizeof kFatalSignals[0]; ++i) {
    ::sigaction(kFatalSignals[i], &g_old_actions[i], nullptr);
  }
}

FdFlagsGuard::FdFlagsGuard(int fd) : fd_(fd), flags_(::fcntl(fd, F_GETFL)) {}

FdFlagsGuard::~FdFlagsGuard() {
  if (flags_ >= 0) ::fcntl(fd_, F_SETFL, flags_);
}

}  // namespace ss
