// ss-vm's command line: `ss vm COMMAND`, and the sandbox verbs of ss that come here (ss start,
// ss stop, ss status, ss destroy, ss clean, ss health-check, ss doctor...).
#pragma once

#include <string>
#include <vector>

#include "command_table.hpp"

namespace ss {

struct VmLine {
  std::string command;            // "start", "image build", ...; empty: none given
  std::vector<std::string> args;  // image rm's ID, health-check's NAME
  std::string sandbox;
  std::string profile;
  std::string backend;
  std::string deploy;
  int timeout = -1;  // -1: the command's own default
  std::string release = "bookworm";
  std::string mirror = "http://deb.debian.org/debian";
  bool force = false;
  bool fish = false;
  bool stop = false;
  bool json = false;
  bool yes = false;
  bool help = false;
};

const CommandTable& VmCommands();

// Exit 64 (ss::Error) for anything VmCommands does not allow, and for a --timeout that is not
// a positive number of seconds.
VmLine ParseVmLine(const std::vector<std::string>& args);

}  // namespace ss
