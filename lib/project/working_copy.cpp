#include "working_copy.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <ctime>
#include <functional>

#include "apply_base.hpp"
#include "config.hpp"
#include "digest.hpp"
#include "error.hpp"
#include "exclude_rules.hpp"
#include "fd.hpp"
#include "folders.hpp"
#include "fs.hpp"
#include "fs_at.hpp"
#include "git_layer.hpp"
#include "held_repository.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "process.hpp"
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
std::string CopyDir(const std::string& project) {
  return Cat("/home/sandbox/copy-projects/", project);
}
std::string SourceStamp(const std::string& project) {
  return Cat("/home/sandbox/.ss/sources/", project, ".stamp");
}

std::string SyncStamp(const std::string& project) {
  return Cat("/home/sandbox/.ss/sync/", project, ".stamp");
}

bool IsCopyMode(const Config& config, const std::string& project) {
  return config.String(Cat("projects.", project, ".mode")) == "copy";
}

std::string PlaceProject(const Config& config, const std::string& project) {
  ProjectStore store;
  bool copy = IsCopyMode(config, project);
  std::string want = Cat(copy ? CopyProjectsDir() : ProjectsDir(), "/", project);
  std::string have = store.ProjectPath(project);
  if (have == want || !store.Exists(project)) return want;
  copy ? EnsureCopyProjectsDir() : EnsureProjectsDir();
  // Never over anything: a folder there (a sandbox may make one in the shared folder) is the
  // user's to look at.
  struct stat st;
  bool taken = ::lstat(want.c_str(), &st) == 0;
  // Into the shared folder: its repository is held first, while no sandbox reaches it.
  if (!copy && !taken) {
    Holding h = HoldRepository(have, project, true);
    for (const auto& line : h.said) Note(Cat("Project '", project, "': ", line));
  }
  if (taken || ::rename(have.c_str(), want.c_str()) != 0) {
    throw Error(kExitCantCreate,
                Cat("cannot move project '", project, "' to ", DisplayPath(want), ": ",
                    taken ? "something is there already" : std::strerror(errno)),
                {},
                {taken ? Cat("look at what is there (a sandbox may have made it; a link is not "
                             "followed) and remove it; the project stays in ",
                             DisplayPath(have))
                       : Cat("the project stays in ", DisplayPath(have))});
  }
  Note(copy ? Cat("Moved project '", project,
                  "' out of the folder sandboxes share (copy mode): ", DisplayPath(want))
            : Cat("Moved project '", project,
                  "' into the folder sandboxes share (shared mode): ", DisplayPath(want)));
  return want;
}

CopySource ProjectCopy(const Config& config, const std::string& project) {
  return {project, PlaceProject(config, project), "", project};
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
  for (const auto& name : CopyModeProjects(config)) out.push_back(ProjectCopy(config, name));
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
        {}, {"see the sandbox's logs: ss health-check"});
  }
  if (r.status != 0) {
    throw Error(kExitUnavailable,
                project.empty()
                    ? Cat("cannot write ", kSyncExcludeFile, " in the sandbox: ", Trim(r.err))
                    : Cat("cannot set up the working copy of '", project,
                          "' in the sandbox: ", Trim(r.err)),
                {}, {"working-copy mode needs sudo for the sandbox user"});
  }
  if (project.empty()) return false;
  // What the layout script saw: "created", "sent STAMP" (what ss last sent), "no-git".
  bool created = false, has_git = true;
  std::optional<std::string> sent;
  for (const auto& line : SplitLines(r.out)) {
    if (line == "created") created = true;
    if (line == "no-git") has_git = false;
    if (line.rfind("sent ", 0) == 0) sent = line.substr(5);
  }
  if (!created) {
    // A copy of a deleted project of the same name goes first; this one starts afresh.
    if (!RemoveStaleCopy(conn, config, sandbox, project)) {
      SendSource(conn, config, source, sent);
      if (!has_git) SeedGitLayer(conn, config, source);
      return false;
    }
    return PrepareWorkingCopy(conn, config, source, sandbox);
  }
  SendSource(conn, config, source, sent);
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
  SeedGitLayer(conn, config, source);
  return true;
}

namespace {

// What of the host's folder a working copy's source holds: folders, regular files and links,
// never a .git nor what sync.exclude leaves out (decided here, on the host), nothing else the
// folder holds (sockets, fifos, devices). Paths are relative ("./a/b"); `manifest` says what
// each was (kind, size, time, mode, link target), so that an unchanged folder is not sent again.
struct SourceListing {
  std::vector<std::string> paths;
  std::string manifest;
};

void ListSourceDir(const std::string& root, std::vector<std::string>& parts,
                   const ExcludeRules& rules, SourceListing& out) {
  std::string dir = root;
  for (const auto& p : parts) dir += "/" + p;
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
  if (!fd.ok()) throw Error(kExitIoErr, Cat("cannot read ", dir, ": ", std::strerror(errno)));
  std::vector<std::pair<std::string, unsigned char>> entries = ReadDirAt(fd.get());
  std::sort(entries.begin(), entries.end());
  for (const auto& [name, type] : entries) {
    struct stat st;
    if (::fstatat(fd.get(), name.c_str(), &st, AT_SYMLINK_NOFOLLOW) != 0) continue;  // gone
    bool is_dir = S_ISDIR(st.st_mode);
    if (!is_dir && !S_ISREG(st.st_mode) && !S_ISLNK(st.st_mode)) continue;
    parts.push_back(name);
    if (!rules.Why(parts, is_dir)) {
      std::string rel = "./" + Join(parts, "/");
      std::string target;
      if (S_ISLNK(st.st_mode)) {
        char buf[4096];
        ssize_t n = ::readlinkat(fd.get(), name.c_str(), buf, sizeof buf);
        if (n > 0) target.assign(buf, static_cast<size_t>(n));
      }
      out.manifest += Cat(rel, '\0', st.st_mode, ' ', is_dir ? 0 : st.st_size, ' ',
                          platform::ModifiedNs(st), '\0', target, '\n');
      out.paths.push_back(std::move(rel));
      if (is_dir) ListSourceDir(root, parts, rules, out);
    }
    parts.pop_back();
  }
}

}  // namespace

void SendSource(SshConnection& conn, const Config& config, const CopySource& source,
                std::optional<std::string> sent) {
  std::vector<std::string> excludes = SyncExcludes(config);
  SourceListing listing;
  std::vector<std::string> parts;
  ListSourceDir(source.host_dir, parts, ExcludeRules(excludes), listing);
  std::string stamp = Sha256Hex(Cat(RenderSyncExclude(excludes), '\0', listing.manifest));
  if (!sent) {
    ExecResult was = conn.Exec({"cat", SourceStamp(source.name)});
    if (was.status == 0) sent = std::string(Trim(was.out));
  }
  if (sent == stamp) return;
  TempDir tmp(SpoolDir(), "ss-source.");
  std::string list = Cat(tmp.path(), "/paths"), archive = Cat(tmp.path(), "/source.tar");
  std::string text;
  for (const auto& p : listing.paths) text += Cat(p, '\0');
  AtomicWrite(list, text, 0600);
  RunChecked({"tar", "-c", "-f", archive, "-C", source.host_dir, "--format=posix", "--null",
              "--verbatim-files-from", "--no-recursion", "-T", list},
             Cat("cannot read ", source.host_dir), {}, kExitIoErr);
  Fd in(::open(archive.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.ok()) throw Error(kExitIoErr, Cat("cannot read ", archive, ": ", std::strerror(errno)));
  StreamOptions so;
  so.in_fd = in.get();
  so.max_err = 64 * 1024;
  std::vector<std::string> argv = ScriptArgv("sh", "receive-source.sh", {source.name, stamp});
  argv.insert(argv.begin(), {"sudo", "-n"});
  int status = conn.ExecStream(argv, so);
  if (status != 0) {
    throw Error(
        kExitRemote,
        Cat("cannot send ", source.folder() ? source.word : Cat("project '", source.name, "'"),
            " to the sandbox (status ", status, ")"),
        {}, {"see the sandbox's logs: ss health-check"});
  }
}

}  // namespace ss
