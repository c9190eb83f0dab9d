#include "packages.hpp"

#include <unistd.h>

#include <algorithm>

#include "error.hpp"
#include "host_commands.hpp"
#include "output.hpp"
#include "process.hpp"
#include "strings.hpp"

namespace ss {
namespace {

bool Installed(const std::string& package) {
  ProcessResult r = Run({"dpkg-query", "-W", "-f", "${Status}", package});
  return r.ok() && r.out.find("install ok installed") != std::string::npos;
}

// Rows of the package table a step needs that are not here: a command not found, or a library
// whose package is not installed.
std::vector<const HostCommand*> Missing(const std::vector<std::string>& steps) {
  std::vector<const HostCommand*> missing;
  for (const auto& row : HostCommands()) {
    bool needed = std::any_of(steps.begin(), steps.end(), [&](const std::string& step) {
      return std::find(row.needed_by.begin(), row.needed_by.end(), step) != row.needed_by.end();
    });
    if (!needed) continue;
    bool present = row.command == "-"
                       ? std::any_of(row.packages.begin(), row.packages.end(), Installed)
                       : LocateCommand(row.command).has_value();
    if (!present) missing.push_back(&row);
  }
  return missing;
}

// The row's package this archive has: the first of its alternatives apt knows.
std::string Candidate(const HostCommand& row) {
  for (const auto& p : row.packages) {
    if (row.packages.size() == 1 || Run({"apt-cache", "show", "--no-all-versions", p}).ok()) {
      return p;
    }
  }
  return row.packages.front();
}

}  // namespace

std::optional<std::string> LocateCommand(std::string_view command) {
  if (auto found = FindInPath(command)) return found;
  if (const HostCommand* row = FindHostCommand(command)) {
    for (const auto& dir : row->dirs) {
      std::string path = Cat(dir, "/", row->command);
      if (::access(path.c_str(), X_OK) == 0) return path;
    }
  }
  return std::nullopt;
}

std::vector<std::string> InstallFor(const std::vector<std::string>& steps, std::string_view what,
                                    Progress& progress) {
  std::vector<const HostCommand*> missing = Missing(steps);
  if (missing.empty()) return {};
  std::vector<std::string> names, packages;
  for (const auto* row : missing) {
    names.push_back(row->command == "-" ? row->packages.front() : Cat("'", row->command, "'"));
  }
  bool root = ::geteuid() == 0;
  bool apt = LocateCommand("apt-get").has_value();
  if (!root || !apt) {
    for (const auto* row : missing) {
      if (std::find(packages.begin(), packages.end(), row->packages.front()) == packages.end()) {
        packages.push_back(row->packages.front());
      }
    }
    std::vector<std::string> hints{Cat("install ", missing.size() == 1 ? "it" : "them", ": ",
                                       root ? "" : "sudo ", "apt-get install ",
                                       Join(packages, " "))};
    if (!root && apt) hints.push_back("or let ss do it: sudo ss vm setup");
    throw Error(kExitUnavailable,
                Cat(what, " needs ", Join(names, ", "), ", which ",
                    missing.size() == 1 ? "is" : "are", " not installed"),
                {}, hints);
  }
  ProcessOptions o;
  o.env = {{"DEBIAN_FRONTEND", "noninteractive"}};
  o.timeout = std::chrono::minutes(20);
  progress.Step(Cat("apt-get update (", what, " needs ", Join(names, ", "), ")"));
  RunChecked({"apt-get", "-o", "DPkg::Lock::Timeout=600", "update", "-qq"}, "apt-get update failed",
             o, kExitUnavailable);
  for (const auto* row : missing) {
    std::string p = Candidate(*row);
    if (std::find(packages.begin(), packages.end(), p) == packages.end()) packages.push_back(p);
  }
  progress.Step(Cat("apt-get install ", Join(packages, " ")));
  std::vector<std::string> argv{"apt-get", "-o",  "DPkg::Lock::Timeout=600", "install",
                                "-y",      "-qq", "--no-install-recommends"};
  argv.insert(argv.end(), packages.begin(), packages.end());
  RunChecked(argv, "apt-get install failed", o, kExitUnavailable);
  return {Cat("installed ", Join(packages, ", "))};
}

}  // namespace ss
