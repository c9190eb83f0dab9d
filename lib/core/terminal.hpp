// The local terminal during an interactive session: raw mode that is always undone, the window
// size, and file status flags put back as they were.
#pragma once

#include <optional>

namespace ss {

struct WindowSize {
  int cols = 80;
  int rows = 24;
};

// The size of the terminal on fd, or nullopt when fd is not a terminal (or reports 0x0).
std::optional<WindowSize> TerminalSize(int fd);

// Puts the terminal on fd in raw mode, as ssh(1) does for a PTY session: no echo, no line
// editing, no signals from keys (Ctrl-C becomes a byte for the remote side), no output
// processing. The saved modes come back when the object is destroyed, at exit(), and on fatal
// signals (SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT, which are then re-raised): every way out but
// SIGKILL. Does nothing when fd is not a terminal. One at a time per process.
class RawTerminal {
 public:
  explicit RawTerminal(int fd);
  ~RawTerminal();
  RawTerminal(const RawTerminal&) = delete;
  RawTerminal& operator=(const RawTerminal&) = delete;

  bool active() const { return active_; }
  // Restores now (idempotent).
  void Restore();

 private:
  bool active_ = false;
  bool owner_ = false;  // this object saved the modes (and installed the signal handlers)
};

// Saves fd's file status flags (O_NONBLOCK is shared with every process using the same open
// file, e.g. the shell's terminal) and puts them back on destruction.
class FdFlagsGuard {
 public:
  explicit FdFlagsGuard(int fd);
  ~FdFlagsGuard();
  FdFlagsGuard(const FdFlagsGuard&) = delete;
  FdFlagsGuard& operator=(const FdFlagsGuard&) = delete;

 private:
  int fd_;
  int flags_ = -1;
};

}  // namespace ss
