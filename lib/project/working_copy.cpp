#include "working_copy.hpp"

#include <ctime>

#include "apply_base.hpp"
#include "config.hpp"
#include "error.hpp"
#include "folders.hpp"
#include "project.hpp"
#include "rescue.hpp"
#include "resources.hpp"
#include "shell_quote.hpp"
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

CopySource ProjectCopy(const std::string& project) {
  return {project, ProjectStore().ProjectPath(project), "", project};
}

CopySource FolderCopy(const Folder& f) { return {f.name, f.path, f.Target(), ShellQuote(f.path)}; }

namespace {

std::vector<std::string> CopyModeProjects(const Config& config) {
  std::vector<std::string> out;
  for (const auto& name : ProjectStore().Names()) {
    if (IsCopyMode(config, name)) out.push_back(name);
  }
  return out;
}

}  // namespace

std::vector<CopySource> CopySourcesIn(const Config& config, const std::string& sandbox) {
  std::vector<CopySource> out;
  if (auto folder = FolderOfSandbox(sandbox)) {
    if (folder->copy) out.push_back(FolderCopy(*folder));
    return out;
  }
  for (const auto& name : CopyModeProjects(config)) out.push_back(ProjectCopy(name));
  return out;
}

bool AnyCopySources(const Config& config) {
  if (!CopyModeProjects(config).empty()) return true;
  for (const auto& f : RecordedFolders()) {
    if (f.copy) return true;
  }
  return false;
}

void RequireCopyIn(const Config& config, const CopySource& source, const std::string& sandbox) {
  for (const auto& s : CopySourcesIn(config, sandbox)) {
    if (s.name == source.name && s.host_dir == source.host_dir) return;
  }
  if (source.folder()) {
    auto own = FolderAt(source.host_dir);
    throw Error(kExitUsage,
                Cat("the working copy of ", source.word, " is not in sandbox '", sandbox, "'"), {},
                {Cat("it is in the folder's own sandbox: --sandbox ", own ? own->sandbox : "?")});
  }
  auto folder = FolderOfSandbox(sandbox);
  throw Error(kExitUsage,
              Cat("sandbox '", sandbox, "' holds ",
                  folder ? Cat("the folder ", folder->path, " only") : "no such working copy",
                  ", not the working copy of '", source.name, "'"),
              {}, {"projects' copies live in the sandboxes that share the projects folder"});
}

bool PrepareWorkingCopy(SshConnection& conn, const Config& config, const CopySource& source,
                        const std::string& sandbox) {
  const std::string& project = source.name;
  struct timespec since = CopyStarts();
  ExecOptions options;
  options.input = RenderSyncExclude(SyncExcludes(config));
  std::vector<std::string> argv = ScriptArgv("sh", "working-copy.sh", {project, source.workspace});
  argv.insert(argv.begin(), {"sudo", "-n"});
  ExecResult r = conn.Exec(argv, options);
  if (r.status == 66) {
    throw Error(
        kExitNoInput,
        Cat(source.folder() ? Cat("the folder ", source.host_dir) : Cat("project '", project, "'"),
            " is not in the sandbox: ", Trim(r.err)),
        {},
        {source.folder() ? "is the folder shared? ss health-check"
                         : "is the projects folder shared? ss health-check"});
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
    return PrepareWorkingCopy(conn, config, source, sandbox);
  }
  // Filled as the sandbox user, as every later sync is; the stamp says when.
  ExecResult filled = conn.Exec(
      ScriptArgv("sh", "sync-tree",
                 {"--exclude-from", kSyncExcludeFile, SourceDir(project), CopyDir(project)}));
  if (filled.status != 0 || conn.Exec({"touch", SyncStamp(project)}).status != 0) {
    throw Error(
        kExitRemote, Cat("cannot fill the working copy of '", project, "' in the sandbox"), {},
        {Trim(filled.err).empty() ? "see the sandbox's logs" : std::string(Trim(filled.err))});
  }
  RecordBase(conn, sandbox, project, source.host_dir, since);
  return true;
}

}  // namespace ss
