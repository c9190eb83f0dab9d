// Output discipline: stdout carries results only; errors, warnings, progress and debug lines go
// to stderr. Colour only on a terminal and never with NO_COLOR set.
#pragma once

#include <chrono>
#include <string>
#include <string_view>

#include "error.hpp"

namespace ss {

// The name of the running binary ("ss-vm"), used as the prefix of every message.
void SetToolName(std::string_view name);
const std::string& ToolName();

bool IsTty(int fd);
bool StdinIsTty();
bool StdoutIsTty();
// Colour on fd: a terminal, NO_COLOR unset (any value disables, per no-color.org), TERM not dumb.
bool UseColor(int fd);

// "ss-x: error: <message>" + details + "hint: ..." lines (or the spec's "Error: ..." block).
void PrintError(const Error& e);
std::string FormatError(const Error& e);
// "ss-x: warning: <message>"
void Warn(std::string_view message);
// A plain line on stderr (progress and notes that are not results).
void Note(std::string_view line);

// SS_DEBUG set to anything but "" or "0" enables "ss-x: debug: ..." lines on stderr.
bool DebugEnabled();
void Debug(std::string_view message);

// Progress of long work on stderr: "==> step (12.3s)". On a terminal the step shows elapsed time.
class Progress {
 public:
  explicit Progress(std::string_view what);
  void Step(std::string_view step);
  void Done(std::string_view summary = {});
  double Elapsed() const;

 private:
  std::chrono::steady_clock::time_point start_;
  std::chrono::steady_clock::time_point step_start_;
  std::string what_;
};

}  // namespace ss
