#include "working_copy.hpp"

#include <ctime>

#include "apply_base.hpp"
#include "config.hpp"
#include "error.hpp"
#include "project.hpp"
#include "rescue.hpp"
#include "resources.hpp"
#include "ssh.hpp"
#include "strings.hpp"

namespace ss {

std::string SourceDir(const std::string& project) {
  return Cat("/home/sandbox/project-src/", project);
}
std::string CopyDir(const std::string& project) { return Cat("/home/sandbox/projects/", project); }
std::string CopyStore(const std::string& project) {
  return Cat("/home/sandbox/.ss/copies/", project);
}

std::string SyncStamp(const std::string& project) {
  return Cat("/home/sandbox/.ss/sync/", project, ".stamp");
}

bool IsCopyMode(const Config& config, const std::string& project) {
  return config.String(Cat("projects.", project, ".mode")) == "copy";
}

std::vector<std::string> SyncExcludes(const Config& config) {
  std::vector<std::string> out = config.List("sync.exclude");
  for (const auto& p : out) {
    if (Trim(p).empty() || p.find('\n') != std::string::npos || p.find('\r') != std::string::npos) {
      throw Error(kExitConfig, Cat("sync.exclude: invalid pattern ", Quoted(p)), {},
                  {"each item is one rsync pattern on one line: ss config set sync.exclude "
                   "'node_modules, .git'"});
    }
  }
  return out;
}

std::string RenderSyncExclude(const std::vector<std::string>& patterns) {
  std::string text =
      "# What syncs of a working copy never copy from ~/project-src/NAME to ~/projects/NAME:\n"
      "# one rsync pattern per line (rsync --exclude-from). Written by ss from sync.exclude in\n"
      "# config.yaml on the host; edit it there (ss config set sync.exclude ...), not here.\n";
  for (const auto& p : patterns) text += p + "\n";
  return text;
}

bool PrepareWorkingCopy(SshConnection& conn, const Config& config, const std::string& project,
                        const std::string& sandbox) {
  struct timespec since = CopyStarts();
  ExecOptions options;
  options.input = RenderSyncExclude(SyncExcludes(config));
  ExecResult r = conn.Exec(
      {"sudo", "-n", "sh", "-c", std::string(RequireResource("lib/templates/working-copy.sh")),
       "working-copy", project},
      options);
  if (r.status == 66) {
    throw Error(kExitNoInput, Cat("project '", project, "' is not in the sandbox: ", Trim(r.err)),
                {}, {"is the projects folder shared? ss health-check"});
  }
  if (r.status != 0) {
    throw Error(kExitUnavailable,
                project.empty()
                    ? Cat("cannot write ", kSyncExcludeFile, " in the sandbox: ", Trim(r.err))
                    : Cat("cannot set up the working copy of '", project,
                          "' in the sandbox: ", Trim(r.err)),
                {}, {"working-copy mode needs mount(8) as root in the sandbox"});
  }
  if (Trim(r.out) != "created") {
    // A copy of a deleted project of the same name goes first; this one starts afresh.
    if (project.empty() || !RemoveStaleCopy(conn, config, sandbox, project)) return false;
    return PrepareWorkingCopy(conn, config, project, sandbox);
  }
  RecordBase(conn, sandbox, project, ProjectStore().ProjectPath(project), since);
  return true;
}

}  // namespace ss
