#include "prompt.hpp"

#include <iostream>

#include "error.hpp"
#include "output.hpp"
#include "strings.hpp"

namespace ss {

std::optional<std::string> ReadLine(std::string_view prompt) {
  std::cout.flush();
  std::cerr << prompt << std::flush;
  std::string line;
  if (!std::getline(std::cin, line)) {
    std::cerr << "\n";
    return std::nullopt;
  }
  return line;
}

bool Confirm(std::string_view question, bool assume_yes, std::string_view yes_flag) {
  if (assume_yes) return true;
  if (!StdinIsTty()) {
    throw Error(kExitUsage, "confirmation needed, but there is no terminal to ask on", {},
                {Cat("pass ", yes_flag, " to confirm from a script")});
  }
  auto answer = ReadLine(question);
  if (!answer) return false;
  std::string a = ToLower(Trim(*answer));
  return a == "y" || a == "yes";
}

}  // namespace ss
