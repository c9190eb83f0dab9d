// ss-sync's command line: `ss sync`, `ss diff`, `ss apply`, `ss fetch` (a working copy) and
// `ss push`, `ss pull` (files in and out of the sandbox).
#pragma once

#include <string>
#include <vector>

#include "command_table.hpp"

namespace ss {

struct SyncLine {
  std::string command;  // "sync", "diff", "apply", "fetch", "push", "pull"; empty: none given
  std::vector<std::string> args;  // PROJECT, or LOCAL REMOTE / REMOTE LOCAL
  std::string sandbox;
  std::string project;
  bool force = false;
  bool dry_run = false;
  bool stat = false;
  int timeout = 60;
  bool json = false;
  bool yes = false;
  bool allow_exec = false;
  bool ours = false, theirs = false, merge = false;
  bool help = false;
};

const CommandTable& SyncCommands();

// Exit 64 (ss::Error) for anything SyncCommands does not allow, and for a --timeout that is not
// a positive number of seconds.
SyncLine ParseSyncLine(const std::vector<std::string>& args);

}  // namespace ss
