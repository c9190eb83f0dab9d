// ss-attach's command line: ss PROJECT, ss run DIR, and the session verbs (shell, root, login,
// claude, claude-run, claude-resume, exec, docker, logs, ssh-config).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "shares.hpp"

namespace ss {

extern const char* const kAttachUsage;

// The verbs that come here (ss shell, ss exec...); any other first word is a project.
const std::vector<std::string>& AttachVerbs();

struct AttachLine {
  std::string verb;                  // empty: ss PROJECT
  std::string project;               // may be empty for verbs that take none
  std::vector<std::string> words;    // positional words after the verb
  std::vector<std::string> command;  // after --
  bool has_command = false;
  bool terminal = false;
  bool force_tty = false;
  std::vector<std::string> env;         // NAME or NAME=VALUE
  std::vector<std::string> secrets;     // --secret
  std::vector<std::string> no_secrets;  // --no-secret
  std::vector<MountSpec> mounts;        // --mount, parsed
  bool no_mount = false;
  std::optional<bool> copy;       // run: --copy, --no-copy
  std::optional<bool> ephemeral;  // --ephemeral, --keep
  std::string profile;
  std::string sandbox;
  int timeout = 0;  // 0: the sandbox's default
  bool help = false;
};

// Exit 64 (ss::Error) for a command line the tool does not take.
AttachLine ParseAttachLine(const std::vector<std::string>& args);

}  // namespace ss
