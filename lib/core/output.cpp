#include "output.hpp"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>

#include "strings.hpp"

namespace ss {
namespace {

std::string& MutableToolName() {
  static std::string name = "ss";
  return name;
}

void WriteErr(std::string_view text) {
  std::cout.flush();
  std::cerr << text;
  std::cerr.flush();
}

std::string Seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1fs", s);
  return buf;
}

}  // namespace

void SetToolName(std::string_view name) { MutableToolName() = std::string(name); }
const std::string& ToolName() { return MutableToolName(); }

bool IsTty(int fd) { return ::isatty(fd) == 1; }
bool StdinIsTty() { return IsTty(STDIN_FILENO); }
bool StdoutIsTty() { return IsTty(STDOUT_FILENO); }

bool UseColor(int fd) {
  if (std::getenv("NO_COLOR") != nullptr) return false;
  const char* term = std::getenv("TERM");
  if (term != nullptr && std::string_view(term) == "dumb") return false;
  return IsTty(fd);
}

// Messages carry what others said (a sandbox's stderr, a file's name): control characters in
// them are shown (^[), never sent to the terminal, where an escape sequence could set the
// clipboard or redraw the screen.
std::string FormatError(const Error& e) {
  std::string out;
  std::string what = Printable(e.what(), true);
  if (e.block()) {
    out = Cat("Error: ", what, "\n");
  } else if (e.plain()) {
    out = Cat(ToolName(), ": ", what, "\n");
  } else {
    bool color = UseColor(STDERR_FILENO);
    out = Cat(ToolName(), ": ", color ? "\033[1;31merror\033[0m" : "error", ": ", what, "\n");
  }
  for (const auto& line : e.details()) out += Cat(Printable(line, true), "\n");
  for (const auto& hint : e.hints()) out += Cat("hint: ", Printable(hint, true), "\n");
  return out;
}

void PrintError(const Error& e) { WriteErr(FormatError(e)); }

void Warn(std::string_view message) {
  bool color = UseColor(STDERR_FILENO);
  WriteErr(Cat(ToolName(), ": ", color ? "\033[1;33mwarning\033[0m" : "warning", ": ",
               Printable(message, true), "\n"));
}

void Note(std::string_view line) { WriteErr(Cat(Printable(line, true), "\n")); }

bool DebugEnabled() {
  static const bool enabled = [] {
    const char* v = std::getenv("SS_DEBUG");
    return v != nullptr && *v != '\0' && std::string_view(v) != "0";
  }();
  return enabled;
}

void Debug(std::string_view message) {
  if (DebugEnabled()) WriteErr(Cat(ToolName(), ": debug: ", message, "\n"));
}

Progress::Progress(std::string_view what)
    : start_(std::chrono::steady_clock::now()), step_start_(start_), what_(what) {}

double Progress::Elapsed() const {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
}

void Progress::Step(std::string_view step) {
  step_start_ = std::chrono::steady_clock::now();
  WriteErr(Cat("==> ", what_, ": ", step, " [", Seconds(Elapsed()), "]\n"));
}

void Progress::Done(std::string_view summary) {
  WriteErr(Cat("==> ", what_, ": ", summary.empty() ? std::string_view("done") : summary, " [",
               Seconds(Elapsed()), "]\n"));
}

}  // namespace ss
