// Work the agent did in working copies (working_copy.hpp) that is not yet on the host. Whatever
// would destroy a sandbox's disk (reset, delete, restore) looks for it first and refuses; told
// to go on (--force), it first saves each such copy on the host, never inside the sandbox:
//
//   $SS_HOME/rescued/SANDBOX-YYYYMMDDTHHMMSSZ/PROJECT.tar.gz   (0600, the projects' owner's)
//
// The archives are the sandbox's bytes, kept as they came: unpack them where you choose.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

class Config;
class Sandbox;
class SshConnection;

struct UnappliedWork {
  std::string project;  // the copy's name (working_copy.hpp's CopySource)
  size_t files = 0;     // created, changed or deleted in the copy since its base
  std::string word;     // how commands name it: the project, or the folder's path
};

// Working copies in `sandbox` (of copy-mode projects, or of its copy-mode folder) with changes of
// their own since their base (see UnappliedChanges in sync.hpp): what the user changed on the
// host meanwhile does not count.
std::vector<UnappliedWork> FindUnapplied(SshConnection& conn, const Config& config,
                                         const std::string& sandbox);

// Saves `paths` (relative to ~/projects in the sandbox; a project's name saves its whole copy)
// as the archive `name` in a new folder of $SS_HOME/rescued for this sandbox. Returns the
// archive's path.
std::string RescueToHost(SshConnection& conn, const std::string& sandbox, const std::string& name,
                         const std::vector<std::string>& paths);

// Before `action` ("reset", "delete", "restore") destroys the sandbox's disk: looks for copies
// with unapplied work (starting a stopped sandbox to look, when copy-mode projects exist) and
// refuses with ss::Error(1) listing them, unless `force`. Then, once the user confirmed, Save()
// puts them on the host.
// A working copy of a project being deleted, in one sandbox: reachable now (`conn`), or in a
// sandbox not running (no `conn`: its copy goes, saved first when it has changes, the next time
// ss reaches that sandbox for the project).
struct WorkingCopyFound {
  std::string sandbox;
  std::unique_ptr<SshConnection> conn;
  size_t unapplied = 0;  // files changed in the copy since its base
};
// Every working copy of `project` in the sandboxes ss knows. Throws ss::Error(1) listing those
// with changes not yet applied, unless `force`.
std::vector<WorkingCopyFound> FindWorkingCopies(const Config& config, const std::string& project,
                                                bool force);
// Removes the copy (its store, base, mounts and records), its changes saved on the host first;
// returns that archive when there was one.
std::optional<std::string> RemoveWorkingCopy(WorkingCopyFound& copy, const std::string& project);
// In PrepareWorkingCopy, with the layout in place: a copy left from a deleted project of this name
// (in a sandbox that was not running then) is saved when it has changes and removed. True when it
// was.
bool RemoveStaleCopy(SshConnection& conn, const Config& config, const std::string& sandbox,
                     const std::string& project);

class UnappliedGuard {
 public:
  // `sandbox` is asked for only when copy-mode projects or folders exist.
  UnappliedGuard(const std::function<Sandbox&()>& sandbox, const Config& config, bool force,
                 std::string_view action);
  UnappliedGuard(const UnappliedGuard&) = delete;
  ~UnappliedGuard();
  // What becomes of the projects (of the folder, for a folder's own sandbox), for the question:
  // "Projects in ~/… are NOT affected.", and which working copies are saved to the host first.
  std::string ProjectsLine(const std::string& sandbox) const;
  // Saves each copy, and fetches the commits of the sandbox's own repositories of shared
  // projects that the host lacks (git_layer.hpp: nothing is lost, a branch moves only as ss
  // fetch moves it); returns a line per archive ("Saved the working copy of 'app' first: …") and
  // per branch fetched.
  std::vector<std::string> Save();

 private:
  std::string sandbox_;
  std::unique_ptr<SshConnection> conn_;
  std::vector<UnappliedWork> work_;
  std::vector<std::string> commits_;  // shared projects whose sandbox repositories have some
  std::unique_ptr<Config> config_;
};

}  // namespace ss
