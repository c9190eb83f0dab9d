// ss-snap's command line: `ss snapshot [NAME]`, `ss snapshot delete NAME`, `ss snapshots` and
// `ss restore NAME`.
#pragma once

#include <string>
#include <vector>

#include "command_table.hpp"

namespace ss {

struct SnapLine {
  std::string command;  // "snapshot", "snapshot delete", "list", "restore"; empty: none given
  std::string name;     // the snapshot's, when the command takes one and it was given
  std::string sandbox;
  int timeout = 60;
  bool force = false;
  bool json = false;
  bool yes = false;
  bool help = false;
};

const CommandTable& SnapCommands();

// Exit 64 (ss::Error) for anything SnapCommands does not allow, and for a --timeout that is not
// a positive number of seconds.
SnapLine ParseSnapLine(const std::vector<std::string>& args);

}  // namespace ss
