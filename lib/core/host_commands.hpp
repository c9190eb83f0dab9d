// The programs ss runs on the host: one table (lib/packages.tsv, built in) naming each one's
// Debian/Ubuntu package and what needs it. The "needs X" messages, what set-up installs and the
// check that ss runs nothing the table does not know all read it.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

struct HostCommand {
  std::string command;                 // "qemu-img"; "-" for a library or data package
  std::vector<std::string> packages;   // alternatives: the first one the archive has
  std::vector<std::string> needed_by;  // "core", "image", "lxd", "docker", "podman", "qemu", ...
  std::vector<std::string> dirs;       // where it may live outside PATH
};

const std::vector<HostCommand>& HostCommands();

// The row of a program, by name or by the last part of a path.
const HostCommand* FindHostCommand(std::string_view program);

// The commands a step needs ("image", "lxd", ...), in table order.
std::vector<std::string> CommandsNeededBy(std::string_view step);

// "install it: sudo apt-get install qemu-utils" (no sudo for root).
std::string InstallHint(std::string_view command);

// Throws ss::Error(70) when `program` is not in the table: ss runs nothing it does not know.
void RequireListed(std::string_view program);

}  // namespace ss
