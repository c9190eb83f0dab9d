#include "rescue.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>

#include "config.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "folders.hpp"
#include "fs.hpp"
#include "git_layer.hpp"
#include "held_repository.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "resources.hpp"
#include "sandbox.hpp"
#include "ssh.hpp"
#include "strings.hpp"
#include "sync.hpp"
#include "transfer.hpp"
#include "working_copy.hpp"

namespace ss {
namespace {

std::string UtcStamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  ::gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y%m%dT%H%M%SZ", &tm);
  return buf;
}

// `test` of whether the copy of `project` exists: where it is, or where an older ss kept it.
std::vector<std::string> CopyExists(const std::string& project) {
  return {"test", "-d", CopyDir(project), "-o", "-d", Cat("/home/sandbox/.ss/copies/", project)};
}

}  // namespace

std::vector<UnappliedWork> FindUnapplied(SshConnection& conn, const Config& config,
                                         const std::string& sandbox) {
  std::vector<UnappliedWork> out;
  for (const auto& source : CopySourcesIn(config, sandbox)) {
    // A copy exists once its folder does (where an older ss kept it, too); its layout is put
    // back. Only test's own "no" counts as none: a sandbox going down answers otherwise, and then
    // nobody can tell.
    ExecResult store = conn.Exec(CopyExists(source.name));
    if (store.status == 1) continue;
    if (store.status != 0) {
      throw Error(kExitRemote,
                  Cat("cannot tell whether the working copy of ", source.word, " is in sandbox '",
                      sandbox, "' (exit status ", store.status, ")"));
    }
    PrepareWorkingCopy(conn, config, source, sandbox);
    size_t n = UnappliedChanges(conn, config, source.name).size();
    if (n > 0) out.push_back({source.name, n, source.word});
  }
  return out;
}

std::string RescueToHost(SshConnection& conn, const std::string& sandbox, const std::string& name,
                         const std::vector<std::string>& paths) {
  std::string dir = Cat(SsHome(), "/rescued/", sandbox, "-", UtcStamp());
  MakeOwnedDir(Cat(SsHome(), "/rescued"), 0700);
  MakeOwnedDir(dir, 0700);
  std::string path = Cat(dir, "/", name, ".tar.gz");
  std::string tmp = Cat(path, ".part");
  Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (!fd.ok()) throw Error(kExitCantCreate, Cat("cannot write ", tmp, ": ", std::strerror(errno)));
  StreamOptions so;
  std::string list;
  for (const auto& p : paths) list += p + '\0';
  std::string list_file = Cat(dir, "/.list");
  AtomicWrite(list_file, list, 0600);
  Fd in(::open(list_file.c_str(), O_RDONLY | O_CLOEXEC));
  so.in_fd = in.get();
  so.out_fd = fd.get();
  // Bounded as every stream from the sandbox is: sync.max_size.
  ArchiveLimit limit{Config::Load().Int("sync.max_size"), Cat("sandbox '", sandbox, "'")};
  so.max_output = limit.bytes;
  so.out_over_limit = std::make_shared<bool>(false);
  int status = -1;
  try {
    status = conn.ExecStream({"tar", "-C", Dirname(CopyDir(name)), "--format=posix", "-czf", "-",
                              "--null", "--verbatim-files-from", "-T", "-"},
                             so);
  } catch (...) {
    ::unlink(list_file.c_str());
    throw;
  }
  bool synced = ::fsync(fd.get()) == 0;
  fd.Close();
  in.Close();
  ::unlink(list_file.c_str());
  if (*so.out_over_limit) {
    ::unlink(tmp.c_str());
    ::rmdir(dir.c_str());
    throw TooLarge(limit, Cat("the saved copy of ", Join(paths, ", ")));
  }
  if (status != 0 || !synced || ::rename(tmp.c_str(), path.c_str()) != 0) {
    ::unlink(tmp.c_str());
    throw Error(kExitIoErr, Cat("cannot save ", Join(paths, ", "), " from the sandbox to ", dir,
                                status != 0 ? Cat(" (tar exited with status ", status, ")")
                                            : Cat(": ", std::strerror(errno))));
  }
  Owner owner = ProjectsOwner();
  if (::geteuid() == 0) (void)::chown(path.c_str(), owner.uid, owner.gid);
  return path;
}

UnappliedGuard::UnappliedGuard(const std::function<Sandbox&()>& get_sandbox, const Config& config,
                               bool force, std::string_view action) {
  std::vector<std::string> held = HeldProjects();
  if (!AnyCopySources(config) && held.empty()) return;
  Sandbox& sandbox = get_sandbox();
  sandbox_ = sandbox.name();
  if (!sandbox.exists()) return;
  if (!AnyCopySources(config) && !sandbox.shares().projects) return;
  conn_ = sandbox.TryConnect();
  if (!conn_) {
    try {
      Progress progress(Cat("sandbox ", sandbox.name()));
      progress.Step("starting it to look for work not yet applied");
      conn_ = sandbox.EnsureRunning(progress, sandbox.DefaultStartTimeout());
    } catch (const Error& e) {
      if (!force) {
        throw Error(kExitFailure,
                    Cat("cannot look for working copies with changes not yet applied: ", e.what()),
                    {}, {"go on without looking (what is not applied is lost): --force"});
      }
      Warn(Cat("could not look for working copies with changes not yet applied: ", e.what()));
      return;
    }
  }
  if (sandbox.shares().projects) {
    for (const auto& name : held) {
      LayerPlace place = SharedLayer(name, Cat(ProjectsDir(), "/", name));
      ExecOptions ask;
      ask.max_output = 1 << 20;
      ExecResult listed = conn_->Exec(LayerBranchesArgv(place), ask);
      if (listed.status == 0 && !listed.over_limit && !NothingToFetch(place, listed.out)) {
        commits_.push_back(name);
      }
    }
    config_ = std::make_unique<Config>(config);
  }
  work_ = FindUnapplied(*conn_, config, sandbox_);
  if (work_.empty() || force) return;
  std::vector<std::string> details, hints;
  for (const auto& w : work_) {
    details.push_back(Cat("  ", w.project, ": ", w.files, w.files == 1 ? " file" : " files"));
    hints.push_back(Cat("bring them to the host: ss apply ", w.word));
  }
  hints.push_back(Cat("or save them on the host first and go on: ss ",
                      action == "restore" ? "restore NAME" : Cat("vm ", action), " --force"));
  throw Error(kExitFailure,
              Cat(action, " would lose changes not yet applied in ", work_.size(),
                  work_.size() == 1 ? " working copy" : " working copies", " of sandbox '",
                  sandbox.name(), "'"),
              details, hints);
}

UnappliedGuard::~UnappliedGuard() = default;

std::string UnappliedGuard::ProjectsLine(const std::string& sandbox) const {
  // A folder's own sandbox shares that folder only.
  auto folder = FolderOfSandbox(sandbox);
  std::string projects = folder ? Cat("The folder ", DisplayPath(folder->path))
                                : Cat("Projects in ", DisplayPath(ProjectsDir()), "/");
  std::string are = folder ? " is NOT affected." : " are NOT affected.";
  if (!commits_.empty()) {
    std::vector<std::string> names;
    for (const auto& c : commits_) names.push_back(Cat("'", c, "'"));
    are += Cat("\nThe sandbox's commits in ", Join(names, ", "),
               " are fetched to your repositories first.");
  }
  if (work_.empty()) return Cat(projects, are);
  std::vector<std::string> names;
  for (const auto& w : work_) names.push_back(Cat("'", w.project, "'"));
  return Cat("Changes not yet applied in the working ", names.size() == 1 ? "copy" : "copies",
             " of ", Join(names, ", "), " are saved to ", DisplayPath(SsHome()),
             "/rescued/ first.\n", projects, are);
}

std::vector<std::string> UnappliedGuard::Save() {
  std::vector<std::string> saved;
  for (const auto& w : work_) {
    std::string path = RescueToHost(*conn_, sandbox_, w.project, {w.project});
    saved.push_back(Cat("Saved the working copy of '", w.project, "' first: ", DisplayPath(path)));
  }
  for (const auto& name : commits_) {
    std::string dir = Cat(ProjectsDir(), "/", name);
    if (HoldForUse(dir, name).state != Holding::State::kHeld) continue;
    LayerPlace place = SharedLayer(name, dir);
    FetchReport report = FetchGitLayer(*conn_, *config_, place, sandbox_);
    for (const auto& line : FetchLines(report)) {
      saved.push_back(Cat("Fetched the commits of '", name, "' first: ", line));
    }
  }
  return saved;
}

namespace {

std::string StaleMark(const std::string& sandbox, const std::string& project) {
  return Cat(StateDir(), "/removed-copies/", sandbox, "/", project);
}

// Saves the copy's unapplied work (if any), then removes it.
std::optional<std::string> SaveAndRemove(SshConnection& conn, const std::string& sandbox,
                                         const std::string& project, size_t unapplied) {
  std::optional<std::string> saved;
  if (unapplied > 0) saved = RescueToHost(conn, sandbox, project, {project});
  std::vector<std::string> argv = ScriptArgv("sh", "remove-copy.sh", {project});
  argv.insert(argv.begin(), {"sudo", "-n"});
  ExecResult r = conn.Exec(argv);
  if (r.status != 0) {
    throw Error(kExitRemote, Cat("cannot remove the working copy of '", project, "' in sandbox '",
                                 sandbox, "': ", Trim(r.err)));
  }
  return saved;
}

}  // namespace

std::vector<WorkingCopyFound> FindWorkingCopies(const Config& config, const std::string& project,
                                                bool force) {
  std::vector<WorkingCopyFound> out;
  std::vector<std::string> details;
  for (const auto& name : KnownSandboxes()) {
    if (FolderOfSandbox(name)) continue;  // a folder's own: no project's copy lives there
    WorkingCopyFound f;
    f.sandbox = name;
    Sandbox sandbox(name, config);
    f.conn = sandbox.TryConnect();
    if (f.conn) {
      if (f.conn->Exec(CopyExists(project)).status != 0) continue;
      PrepareWorkingCopy(*f.conn, config, ProjectCopy(config, project), name);
      f.unapplied = UnappliedChanges(*f.conn, config, project).size();
      if (f.unapplied > 0) {
        details.push_back(
            Cat("  in sandbox '", name, "': ", f.unapplied, f.unapplied == 1 ? " file" : " files"));
      }
    }
    out.push_back(std::move(f));
  }
  if (!details.empty() && !force) {
    throw Error(kExitFailure,
                Cat("deleting '", project, "' would lose changes not yet applied in its working ",
                    details.size() == 1 ? "copy" : "copies"),
                details,
                {Cat("bring them to the host first: ss apply ", project),
                 Cat("or save them on the host and delete: ss delete ", project, " --force")});
  }
  return out;
}

std::optional<std::string> RemoveWorkingCopy(WorkingCopyFound& copy, const std::string& project) {
  if (!copy.conn) {
    std::string mark = StaleMark(copy.sandbox, project);
    MakeDirs(Dirname(mark), 0700);
    AtomicWrite(mark, "", 0600);
    return std::nullopt;
  }
  return SaveAndRemove(*copy.conn, copy.sandbox, project, copy.unapplied);
}

bool RemoveStaleCopy(SshConnection& conn, const Config& config, const std::string& sandbox,
                     const std::string& project) {
  std::string mark = StaleMark(sandbox, project);
  if (!PathExists(mark)) return false;
  // The layout is in place (PrepareWorkingCopy): what the copy holds of its own is saved whole.
  size_t unapplied = UnappliedChanges(conn, config, project).size();
  if (auto saved = SaveAndRemove(conn, sandbox, project, unapplied)) {
    Note(Cat("Saved the changes of the working copy of a deleted project '", project,
             "' before removing it: ", DisplayPath(*saved)));
  }
  ::unlink(mark.c_str());
  return true;
}

}  // namespace ss
