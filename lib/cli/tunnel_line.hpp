// ss-tunnel's command line, in ssh(1)'s grammar: -L and -R forwards, --browser, -N, -i, -p,
// --known-hosts, DEST; or --check.
#pragma once

#include <string>
#include <vector>

#include "forward_spec.hpp"
#include "tunnel.hpp"

namespace ss {

extern const char* const kTunnelUsage;

struct TunnelLine {
  std::vector<ForwardSpec> forwards;
  bool browser = false;
  bool no_shell = false;
  DestinationFlags dest_flags;
  bool json = false;
  bool check = false;
  bool help = false;
  std::string dest;
};

// Exit 64 (ss::Error) for an unknown option, a value missing or bad, a forward ssh would not
// take, or a second destination.
TunnelLine ParseTunnelLine(const std::vector<std::string>& args);

}  // namespace ss
