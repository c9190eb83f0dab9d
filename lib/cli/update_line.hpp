// ss-update's command line: ss update [--check].
#pragma once

#include <string>
#include <vector>

namespace ss {

extern const char* const kUpdateUsage;

struct UpdateLine {
  bool check = false;
  bool background = false;
  bool help = false;
};

// Exit 64 (ss::Error) for a command line the tool does not take.
UpdateLine ParseUpdateLine(const std::vector<std::string>& args);

}  // namespace ss
