// ss-net's command line: allow, deny, mode, ls, log, ca, serve, fence and relay.
#pragma once

#include <string>
#include <vector>

#include "net_fence.hpp"

namespace ss {

extern const char* const kNetUsage;

struct NetLine {
  std::string verb;
  std::vector<std::string> words;
  std::string sandbox;
  bool json = false;
  bool follow = false;
  bool help = false;
  // serve
  std::vector<std::string> proxy, transparent, dns;
  std::string upstream_dns, policy, log;
  // fence
  NetFence fence;
  // relay
  std::string to;
};

// Exit 64 (ss::Error) for a command line the tool does not take.
NetLine ParseNetLine(const std::vector<std::string>& args);

}  // namespace ss
