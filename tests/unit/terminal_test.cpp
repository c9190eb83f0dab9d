#include "terminal.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace ss {
namespace {

class Pty {
 public:
  Pty() {
    winsize ws{};
    ws.ws_row = 33;
    ws.ws_col = 111;
    EXPECT_EQ(::openpty(&master, &slave, nullptr, nullptr, &ws), 0);
  }
  ~Pty() {
    ::close(master);
    ::close(slave);
  }
  termios Modes() const {
    termios t{};
    EXPECT_EQ(::tcgetattr(slave, &t), 0);
    return t;
  }
  int master = -1;
  int slave = -1;
};

bool Same(const termios& a, const termios& b) {
  return a.c_iflag == b.c_iflag && a.c_oflag == b.c_oflag && a.c_cflag == b.c_cflag &&
         a.c_lflag == b.c_lflag && std::memcmp(a.c_cc, b.c_cc, sizeof a.c_cc) == 0;
}

TEST(Terminal, SizeOfAPty) {
  Pty pty;
  auto size = TerminalSize(pty.slave);
  ASSERT_TRUE(size.has_value());
  EXPECT_EQ(size->cols, 111);
  EXPECT_EQ(size->rows, 33);
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  EXPECT_FALSE(TerminalSize(pipe_fds[0]).has_value());
  ::close(pipe_fds[0]);
  ::close(pipe_fds[1]);
}

TEST(Terminal, RawModeIsUndoneOnDestruction) {
  Pty pty;
  termios before = pty.Modes();
  {
    RawTerminal raw(pty.slave);
    EXPECT_TRUE(raw.active());
    termios now = pty.Modes();
    EXPECT_EQ(now.c_lflag & (ICANON | ECHO | ISIG | IEXTEN), 0u);
    EXPECT_EQ(now.c_oflag & OPOST, 0u);
    EXPECT_EQ(now.c_iflag & (ICRNL | IXON), 0u);
    // One at a time: a second one does nothing and does not undo the first.
    {
      RawTerminal second(pty.slave);
      EXPECT_FALSE(second.active());
    }
    EXPECT_EQ(pty.Modes().c_lflag & ICANON, 0u);
  }
  EXPECT_TRUE(Same(before, pty.Modes()));
  RawTerminal not_a_tty(-1);
  EXPECT_FALSE(not_a_tty.active());
}

// A child enters raw mode and then dies in the ways that skip destructors.
void ExpectRestoredAfter(void (*die)(), int expect_signal) {
  Pty pty;
  termios before = pty.Modes();
  pid_t pid = ::fork();
  if (pid == 0) {
    new RawTerminal(pty.slave);  // never destroyed
    die();
    ::_exit(99);
  }
  int status = 0;
  ASSERT_EQ(::waitpid(pid, &status, 0), pid);
  if (expect_signal) {
    ASSERT_TRUE(WIFSIGNALED(status));
    EXPECT_EQ(WTERMSIG(status), expect_signal);
  } else {
    ASSERT_TRUE(WIFEXITED(status));
  }
  EXPECT_TRUE(Same(before, pty.Modes()));
}

TEST(Terminal, RawModeIsUndoneOnAbort) {
  ExpectRestoredAfter([] { std::abort(); }, SIGABRT);
}

TEST(Terminal, RawModeIsUndoneOnSegfault) {
  ExpectRestoredAfter([] { ::raise(SIGSEGV); }, SIGSEGV);
}

TEST(Terminal, RawModeIsUndoneAtExit) {
  ExpectRestoredAfter([] { std::exit(3); }, 0);
}

TEST(Terminal, FdFlagsComeBack) {
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  int before = ::fcntl(fds[0], F_GETFL);
  {
    FdFlagsGuard guard(fds[0]);
    ::fcntl(fds[0], F_SETFL, before | O_NONBLOCK);
  }
  EXPECT_EQ(::fcntl(fds[0], F_GETFL), before);
  ::close(fds[0]);
  ::close(fds[1]);
}

}  // namespace
}  // namespace ss
