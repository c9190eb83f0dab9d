// ss-config's command line: show, get, set, path, profiles, or the Settings menu.
#pragma once

#include <string>
#include <vector>


namespace ss {

extern const char* const kConfigUsage;

struct ConfigLine {
  std::string action = "show";  // show | get | set | path | profiles | help | menu
  std::string key;
  std::string value;
  bool json = false;
};

// Exit 64 (ss::Error) for a command line the tool does not take.
ConfigLine ParseConfigLine(const std::vector<std::string>& args);

}  // namespace ss
