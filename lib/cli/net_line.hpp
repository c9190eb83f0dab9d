// ss-net's command line: allow, deny, mode, ls, log, ca, serve, fence and relay.
#pragma once

#include <string>
#include <vector>

#include "command_table.hpp"
#include "net_fence.hpp"

namespace ss {

struct NetLine {
  std::string verb;                // "allow", ..., "fence" (fence's own command in words[0])
  std::vector<std::string> words;  // the rules, the mode, or fence's apply|remove|check
  std::string sandbox;
  bool json = false;
  bool follow = false;
  bool help = false;
  // serve
  std::vector<std::string> proxy, transparent, dns;
  std::string upstream_dns, policy, log;
  int connections = 0;  // serve --connections (0: its default)
  // fence
  NetFence fence;
  // relay
  std::string to;
};

const CommandTable& NetCommands();

// Exit 64 (ss::Error) for anything NetCommands does not allow, and for what a command needs and
// was not given (fence apply's ports, serve's listeners, relay's --to, --sandbox where it is
// required).
NetLine ParseNetLine(const std::vector<std::string>& args);

}  // namespace ss
