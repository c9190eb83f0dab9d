// ss-project's command line: ss new, ss list, ss delete, ss project show, ss project path.
#pragma once

#include <string>
#include <vector>

#include "command_table.hpp"

namespace ss {

struct ProjectLine {
  enum class Command { kHelp, kNew, kList, kShow, kDelete, kPath, kGuard };
  Command command = Command::kList;
  std::string name;
  std::string from;                  // new --from PATH
  bool github = false;               // new --github
  bool is_private = false;           // new --private
  bool copy = false;                 // new --copy: projects.<name>.mode: copy
  bool json = false;                 // list, show
  bool no_size = false;              // list
  bool yes = false;                  // delete
  bool force = false;                // delete: also with work not yet applied in a working copy
  std::string sandbox;               // guard
  std::string projects_dir;          // guard --projects
  std::vector<std::string> folders;  // guard --folder
};

const CommandTable& ProjectCommands();

// argv without argv[0]: [SUBCOMMAND] [ARGS...]; no subcommand means list. Throws ss::Error(64)
// (or a boost::program_options error, which the tool reports as 64) on a bad command line.
ProjectLine ParseProjectLine(const std::vector<std::string>& args);

}  // namespace ss
