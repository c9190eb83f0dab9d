#include "host_commands.hpp"

#include <unistd.h>

#include <algorithm>

#include "error.hpp"
#include "resources.hpp"
#include "strings.hpp"

namespace ss {
namespace {

std::vector<std::string> Field(const std::string& text, char sep) {
  if (text == "-") return {};
  return Split(text, sep);
}

std::vector<HostCommand> Parse(std::string_view tsv) {
  std::vector<HostCommand> rows;
  int number = 0;
  for (const auto& line : SplitLines(tsv)) {
    ++number;
    if (line.empty() || line[0] == '#') continue;
    auto f = Split(line, '\t');
    if (f.size() != 4 || f[1].empty()) {
      throw Error(kExitSoftware, Cat("internal: lib/packages.tsv:", number, " is not 4 columns"));
    }
    rows.push_back({f[0], Field(f[1], '|'), Field(f[2], ','), Field(f[3], ':')});
  }
  return rows;
}

std::string_view Basename(std::string_view program) {
  auto slash = program.rfind('/');
  return slash == std::string_view::npos ? program : program.substr(slash + 1);
}

}  // namespace

const std::vector<HostCommand>& HostCommands() {
  static const std::vector<HostCommand> rows = Parse(RequireResource("lib/packages.tsv"));
  return rows;
}

const HostCommand* FindHostCommand(std::string_view program) {
  std::string_view name = Basename(program);
  for (const auto& row : HostCommands()) {
    if (row.command == name) return &row;
  }
  return nullptr;
}

std::vector<std::string> CommandsNeededBy(std::string_view step) {
  std::vector<std::string> out;
  for (const auto& row : HostCommands()) {
    if (row.command != "-" &&
        std::find(row.needed_by.begin(), row.needed_by.end(), step) != row.needed_by.end()) {
      out.push_back(row.command);
    }
  }
  return out;
}

std::string InstallHint(std::string_view command) {
  const HostCommand* row = FindHostCommand(command);
  std::string package =
      row && !row->packages.empty() ? row->packages.front() : std::string(command);
  return Cat("install it: ", ::geteuid() == 0 ? "" : "sudo ", "apt-get install ", package);
}

void RequireListed(std::string_view program) {
  if (!FindHostCommand(program)) {
    throw Error(kExitSoftware,
                Cat("internal: ss ran '", program, "', which lib/packages.tsv does not list"));
  }
}

}  // namespace ss
