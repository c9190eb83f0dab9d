// ss-config's command line: show, get, set, path, profiles, or the Settings menu.
#pragma once

#include <string>
#include <vector>

#include "command_table.hpp"

namespace ss {

struct ConfigLine {
  std::string action = "show";  // show | get | set | path | profiles | help | menu
  std::string key;
  std::string value;
  bool json = false;
};

const CommandTable& ConfigCommands();

// Exit 64 (ss::Error) for anything ConfigCommands does not allow. No words at all is the
// Settings menu (show with --json); the VALUE of set is taken as written, also when it starts
// with '-' ("-1GB").
ConfigLine ParseConfigLine(const std::vector<std::string>& args);

}  // namespace ss
