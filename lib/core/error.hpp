// The one error type of ss. Library code throws it; each binary's main() catches it once and
// prints it in the one message shape:
//
//   ss-vm: error: cannot start 'box': qemu exited with status 1     (message)
//   <details, verbatim, one per line>                               (details)
//   hint: run 'ss doctor'                                           (hints)
//
// Some errors are worded by the spec as a block starting with "Error: " (AsBlock), a few as a
// bare "<tool>: <message>" line (AsPlain).
#pragma once

#include <stdexcept>
#include <string>
#include <vector>

#include "exit_code.hpp"

namespace ss {

class Error : public std::runtime_error {
 public:
  Error(int code, std::string message, std::vector<std::string> details = {},
        std::vector<std::string> hints = {})
      : std::runtime_error(message),
        code_(code),
        details_(std::move(details)),
        hints_(std::move(hints)) {}

  int code() const { return code_; }
  const std::vector<std::string>& details() const { return details_; }
  const std::vector<std::string>& hints() const { return hints_; }
  bool block() const { return style_ == kBlock; }
  bool plain() const { return style_ == kPlain; }

  Error& Detail(std::string line) {
    details_.push_back(std::move(line));
    return *this;
  }
  Error& Hint(std::string line) {
    hints_.push_back(std::move(line));
    return *this;
  }
  // Printed as the spec shows it: "Error: <message>" then the details, without the tool prefix.
  Error& AsBlock() {
    style_ = kBlock;
    return *this;
  }
  // Printed as "<tool>: <message>", without "error:" (e.g. "ss: connection to sandbox 'x' lost").
  Error& AsPlain() {
    style_ = kPlain;
    return *this;
  }

 private:
  int code_;
  std::vector<std::string> details_;
  std::vector<std::string> hints_;
  enum Style { kStandard, kBlock, kPlain } style_ = kStandard;
};

}  // namespace ss
