#include "held_repository.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <map>
#include <thread>

#include "digest.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "fs_at.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "project.hpp"
#include "resources.hpp"
#include "ssh.hpp"
#include "strings.hpp"

namespace ss {
namespace {

constexpr const char* kSandboxRepositories = "/home/sandbox/repositories";
// Written once every project's .git folder has been moved (HoldAllRepositories).
constexpr const char* kHeldMark = ".all-held";
constexpr const char* kStagedPrefix = ".new-";  // the hidden folder's name (ProjectStore::Create)

// The host's git, with none of the variables that would point it elsewhere.
ProcessResult HostGit(std::vector<std::string> args) {
  args.insert(args.begin(), "git");
  ProcessOptions o;
  o.unset_env = GitEnvToUnset();
  return Run(args, o);
}

std::string GitOut(std::vector<std::string> args, std::string_view what) {
  ProcessResult r = HostGit(std::move(args));
  if (!r.ok()) throw Error(kExitIoErr, std::string(what), {std::string(Trim(r.err))});
  return r.out;
}

// Given back to the projects' owner when root made it (ss under sudo).
void GiveToOwner(const std::string& path) {
  if (::geteuid() != 0) return;
  Owner o = ProjectsIds();
  ChownTree(path, o.uid, o.gid);
}

// The project folder `dir`, opened as itself: never through a link (the sandbox may have put one
// in its place, leading anywhere on the host). Every change ss makes to its .git goes through it.
Fd OpenProjectFolder(const std::string& dir) {
  Fd parent(::open(Dirname(dir).c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (!parent.ok()) PathError("open", Dirname(dir), errno);
  Fd fd(OpenDirAt(parent.get(), Basename(dir)));
  if (!fd.ok()) {
    int err = errno;
    if (err == ELOOP || err == ENOTDIR) {
      throw Error(kExitIoErr, Cat(DisplayPath(dir), " is not a folder (a link, or a file)"), {},
                  {"a sandbox may have put it there: look at it, move it away, and put the "
                   "project's folder back"});
    }
    PathError("open", dir, err);
  }
  return fd;
}

// Written whole under a name of its own, then put in place, never over anything: whoever reads
// .git (the folder guard, folder_guard.hpp, as soon as it appears) never finds it half-written.
void WriteGitFile(int dir_fd, const std::string& dir, const std::string& name) {
  std::string part = Cat(".git.new-", RandomNonce().substr(0, 12));
  Fd fd(::openat(dir_fd, part.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644));
  if (!fd.ok()) PathError("write", dir + "/.git", errno);
  try {
    WriteAll(fd.get(), HeldGitFile(name), dir + "/.git");
    if (::geteuid() == 0) {
      Owner o = ProjectsIds();
      if (::fchown(fd.get(), o.uid, o.gid) != 0) PathError("give", dir + "/.git", errno);
    }
    if (!RenameNoReplace(dir_fd, part, ".git")) PathError("write", dir + "/.git", EEXIST);
  } catch (...) {
    ::unlinkat(dir_fd, part.c_str(), 0);
    throw;
  }
}

// MoveGitAside, and the line saying so.
std::string SetAside(int dir_fd, const std::string& dir, std::string_view what) {
  return Cat("set aside ", what,
             " found in place of the project's .git file: ", MoveGitAside(dir_fd, dir));
}

}  // namespace

std::string MoveAside(int dir_fd, const std::string& dir, const std::string& name) {
  for (int i = 0;; ++i) {
    std::string to = Cat(name, ".refused-", std::time(nullptr), "-", RandomNonce().substr(0, 8));
    if (RenameNoReplace(dir_fd, name, to)) return DisplayPath(Cat(dir, "/", to));
    if (i > 20) PathError("move aside", Cat(dir, "/", name), EEXIST);
  }
}

std::string MoveGitAside(int dir_fd, const std::string& dir) {
  return MoveAside(dir_fd, dir, ".git");
}

bool PlainRemoteUrl(std::string_view url) {
  auto plain = [](std::string_view part, std::string_view also) {
    return !part.empty() && part.front() != '-' &&
           part.find_first_not_of(Cat("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                      "0123456789.-",
                                      also)) == std::string_view::npos;
  };
  if (url.empty() || url.find_first_of(" \t\r\n\"'\\`$;|&<>") != std::string_view::npos)
    return false;
  for (std::string_view scheme : {"https://", "ssh://"}) {
    if (url.rfind(scheme, 0) != 0) continue;
    std::string_view rest = url.substr(scheme.size());
    std::string_view authority = rest.substr(0, rest.find('/'));
    auto at = authority.rfind('@');
    std::string_view host = at == std::string_view::npos ? authority : authority.substr(at + 1);
    return plain(host.substr(0, host.find(':')), "") && rest.find('/') != std::string_view::npos;
  }
  // user@host:path, the form git reads as ssh only when no '/' comes before the ':'.
  auto colon = url.find(':');
  if (colon == std::string_view::npos || url.find("::") != std::string_view::npos) return false;
  std::string_view user_host = url.substr(0, colon);
  auto at = user_host.find('@');
  return at != std::string_view::npos && plain(user_host.substr(0, at), "_") &&
         plain(user_host.substr(at + 1), "") && colon + 1 < url.size();
}

std::string HeldRepositoryDir(const std::string& name) { return Cat(RepositoriesDir(), "/", name); }
std::string SandboxRepositoryDir(const std::string& name) {
  return Cat(kSandboxRepositories, "/", name);
}
std::string HeldGitFile(const std::string& name) {
  return Cat("gitdir: ../../repositories/", name, "\n");
}

bool IsCheckout(const std::string& dir) { return PathExists(dir + "/.git"); }

std::optional<std::string> HeldGitDirOf(const std::string& dir) {
  std::string name = Basename(dir);
  std::string parent = Dirname(dir);
  if (!IsValidProjectName(name) || (parent != ProjectsDir() && parent != CopyProjectsDir())) {
    return std::nullopt;
  }
  // In the projects folder, whatever stands at dir/.git (the sandbox may have put a folder there
  // a moment ago). In the copy-mode folder, which no sandbox is given, only ss's own .git file
  // leads there (a folder of that name in the projects folder is no copy-mode project's).
  struct stat st;
  std::string held = HeldRepositoryDir(name);
  if (::lstat(held.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) return std::nullopt;
  if (parent == CopyProjectsDir()) {
    std::string file = dir + "/.git";
    if (::lstat(file.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
        ReadFileIfExists(file).value_or("") != HeldGitFile(name)) {
      return std::nullopt;
    }
  }
  return held;
}

std::string GitDirOf(const std::string& dir) { return HeldGitDirOf(dir).value_or(dir + "/.git"); }

namespace {

Holding HoldOnce(const std::string& dir, const std::string& name, bool trusted) {
  Holding h;
  Fd project = OpenProjectFolder(dir);
  int pfd = project.get();
  std::string held = HeldRepositoryDir(name);
  struct stat st;
  bool have_held = ::lstat(held.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
  if (::fstatat(pfd, ".git", &st, AT_SYMLINK_NOFOLLOW) != 0) {
    if (errno != ENOENT) PathError("read", dir + "/.git", errno);
    if (!have_held) return h;
    WriteGitFile(pfd, dir, name);
    h.said.push_back("put back the project's .git file, which was gone");
    h.state = Holding::State::kHeld;
    return h;
  }
  if (S_ISREG(st.st_mode)) {
    std::string problem;
    auto text = ReadSmallFileAt(pfd, ".git", 4096, &problem);
    if (text && problem.empty() && *text == HeldGitFile(name) && have_held) {
      h.state = Holding::State::kHeld;
      return h;
    }
  }
  if (!S_ISDIR(st.st_mode)) {
    h.said.push_back(SetAside(pfd, dir,
                              S_ISREG(st.st_mode)   ? "a .git file"
                              : S_ISLNK(st.st_mode) ? "a link"
                                                    : "a special file"));
    if (!have_held) return h;
    WriteGitFile(pfd, dir, name);
    h.state = Holding::State::kHeld;
    return h;
  }
  // A .git folder.
  std::string left_mark = Cat(RepositoriesDir(), "/.left-", name);
  if (!have_held && !trusted) {
    if (auto why = ReadFileIfExists(left_mark)) {
      h.state = Holding::State::kLeft;  // found so when ss could trust it (HoldAllRepositories)
      h.why = std::string(Trim(*why));
      return h;
    }
  }
  if (have_held && !trusted) {
    h.said.push_back(SetAside(pfd, dir, "a .git folder"));
    WriteGitFile(pfd, dir, name);
    h.state = Holding::State::kHeld;
    return h;
  }
  if (!trusted) {
    // Maybe the sandbox's: never read on the host (git would follow its links, alternates and
    // common directory anywhere the user can read). Set aside whole.
    std::string at = MoveGitAside(pfd, dir);
    h.said.push_back(Cat("set aside a .git folder of a project whose repository ss did not hold ",
                         "(the sandbox may have made it): ", at));
    h.said.push_back(Cat("if you made it yourself, give it to ss: mv ", at, " ", DisplayPath(held),
                         " && printf 'gitdir: ../../repositories/", name, "\\n' > ",
                         DisplayPath(dir), "/.git"));
    return h;
  }
  auto leave = [&](std::string why) {
    EnsureRepositoriesDir();
    AtomicWrite(left_mark, why + "\n", 0600);
    h.state = Holding::State::kLeft;
    h.why = std::move(why);
    return h;
  };
  if (::fstatat(pfd, ".git/modules", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    return leave("it has submodules, whose checkouts lead into it");
  }
  EnsureRepositoriesDir();
  if (have_held) {
    // Left by a project of the same name that was removed by hand: kept, under another name.
    std::string old = Cat(held, ".old-", std::time(nullptr));
    if (::rename(held.c_str(), old.c_str()) != 0) PathError("move aside", held, errno);
    h.said.push_back(Cat("an older repository of that name was set aside: ", DisplayPath(old)));
  }
  if (::renameat(pfd, ".git", AT_FDCWD, held.c_str()) != 0) {
    if (errno != EXDEV) PathError("move", dir + "/.git", errno);
    return leave(Cat("it is on another filesystem than ", DisplayPath(RepositoriesDir())));
  }
  // What was moved is a folder (a link swapped in meanwhile would lead anywhere): else it goes.
  if (::lstat(held.c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) {
    ::unlink(held.c_str());
    throw Error(kExitIoErr, Cat(DisplayPath(dir + "/.git"), " changed while it was moved"), {},
                {"a sandbox may be changing it: stop it (ss vm stop), then run the command again"});
  }
  WriteGitFile(pfd, dir, name);
  // Linked worktrees record where the repository was.
  if (IsDirectory(held + "/worktrees")) {
    HostGit({"--git-dir", held, "--work-tree", dir, "worktree", "repair"});
  }
  h.said.push_back(Cat("moved the repository of ", DisplayPath(dir), " to ", DisplayPath(held),
                       ", out of the sandbox's reach; .git is now a file that leads there"));
  h.state = Holding::State::kHeld;
  return h;
}

}  // namespace

Holding HoldRepository(const std::string& dir, const std::string& name, bool trusted) {
  // Two of ss's own may hold at once (a session's end and the folder guard, folder_guard.hpp):
  // what one moved or wrote, the other finds gone or there; asked again, it finds all in place.
  for (int i = 0;; ++i) {
    try {
      return HoldOnce(dir, name, trusted);
    } catch (const Error&) {
      if (i == 2) throw;
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }
}

std::string StageRepository(const std::string& dir, const std::string& name) {
  Fd project = OpenProjectFolder(dir);
  EnsureRepositoriesDir();
  std::string staged = Cat(RepositoriesDir(), "/", Basename(dir));
  if (::renameat(project.get(), ".git", AT_FDCWD, staged.c_str()) != 0) {
    PathError("move", dir + "/.git", errno);
  }
  WriteGitFile(project.get(), dir, name);
  return staged;
}

void InstallStagedRepository(const std::string& staged, const std::string& name) {
  std::string held = HeldRepositoryDir(name);
  struct stat st;
  if (::lstat(held.c_str(), &st) == 0) {
    // Left by a project of the same name that was removed by hand: kept, under another name.
    std::string old = Cat(held, ".old-", std::time(nullptr));
    if (::rename(held.c_str(), old.c_str()) != 0) PathError("move aside", held, errno);
    Note(Cat("An older repository of project '", name, "' was set aside: ", DisplayPath(old)));
  }
  if (::rename(staged.c_str(), held.c_str()) != 0) PathError("move", staged, errno);
}

void RemoveStagedRepository(const std::string& staged) {
  struct stat st;
  if (::lstat(staged.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) RemoveTree(staged);
}

void SettleStagedRepositories(const std::string& only) {
  std::string repositories = RepositoriesDir();
  if (!IsDirectory(repositories)) return;
  std::string prefix = Cat(kStagedPrefix, only);
  for (const auto& entry : ListDir(repositories)) {
    if (entry.rfind(prefix, 0) != 0) continue;
    std::string_view rest = std::string_view(entry).substr(std::strlen(kStagedPrefix));
    std::string name(rest.substr(0, rest.rfind('.')));
    if (!IsValidProjectName(name) || (!only.empty() && name != only)) continue;
    // Its project still being made, or abandoned there (the store collects both).
    if (PathExists(Cat(CopyProjectsDir(), "/", entry)) ||
        PathExists(Cat(ProjectsDir(), "/", entry)))
      continue;
    std::string staged = Cat(repositories, "/", entry);
    Fd project(OpenDirAt(AT_FDCWD, Cat(ProjectsDir(), "/", name)));
    if (project.ok() && ::flock(project.get(), LOCK_EX | LOCK_NB) != 0) continue;  // its maker
    struct stat st;
    try {
      if (project.ok() && ::lstat(HeldRepositoryDir(name).c_str(), &st) != 0 && errno == ENOENT) {
        if (::rename(staged.c_str(), HeldRepositoryDir(name).c_str()) != 0)
          PathError("move", staged, errno);
      } else {
        RemoveStagedRepository(staged);  // its project gone, or another repository in its place
      }
    } catch (const Error&) {
      // Left for the next time.
    }
  }
}

void HoldAllRepositories() {
  std::string mark = Cat(RepositoriesDir(), "/", kHeldMark);
  if (PathExists(mark)) return;
  // Marked first: this pass trusts what it finds, once, whatever happens in it.
  EnsureRepositoriesDir();
  AtomicWrite(mark, "", 0600);
  GiveToOwner(mark);
  std::string base = ProjectsDir();
  if (!IsDirectory(base)) return;
  for (const auto& name : ListDir(base)) {
    std::string dir = Cat(base, "/", name);
    struct stat st;
    // (A copy-mode project's name here is a folder the sandbox made: not the project.)
    if (!IsValidProjectName(name) || ::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        PathExists(Cat(CopyProjectsDir(), "/", name))) {
      continue;
    }
    try {
      Holding h = HoldRepository(dir, name, true);
      for (const auto& line : h.said) Note(Cat("Project '", name, "': ", line));
    } catch (const Error& e) {
      Warn(Cat("project '", name, "': its repository stays in its folder: ", e.what()));
    }
  }
}

Holding HoldForUse(const std::string& dir, const std::string& name) {
  HoldAllRepositories();
  SettleStagedRepositories(name);
  // A repository over every project that has none of its own: the sandbox's, if anyone's.
  Fd projects(::open(ProjectsDir().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  struct stat st;
  if (projects.ok() && ::fstatat(projects.get(), ".git", &st, AT_SYMLINK_NOFOLLOW) == 0) {
    Warn(Cat("set aside a .git found in the projects folder itself: ",
             MoveGitAside(projects.get(), ProjectsDir())));
  }
  Holding h = HoldRepository(dir, name, false);
  for (const auto& line : h.said) Warn(Cat("project '", name, "': ", line));
  if (h.state == Holding::State::kLeft) {
    Warn(Cat("the repository of project '", name,
             "' stays in its folder, where the sandbox can change it: ", h.why));
  }
  return h;
}

SandboxRun RunOver(SshConnection& conn) {
  return [&conn](const std::vector<std::string>& argv, int in_fd, int out_fd, int err_fd) {
    StreamOptions so;
    so.in_fd = in_fd;
    so.out_fd = out_fd;
    so.err_fd = err_fd;
    so.max_err = 64 * 1024;
    return conn.ExecStream(argv, so);
  };
}

namespace {

Fd OpenNull(int flags) {
  Fd fd(::open("/dev/null", flags | O_CLOEXEC));
  if (!fd.ok()) throw Error(kExitIoErr, Cat("cannot open /dev/null: ", std::strerror(errno)));
  return fd;
}

}  // namespace

SandboxOutput RunCaptured(const SandboxRun& run, const std::vector<std::string>& argv, int in_fd,
                          bool with_err) {
  constexpr size_t kMost = 1 << 20;
  Fd null_in = OpenNull(O_RDONLY), null_out = OpenNull(O_WRONLY);
  int fds[2];
  if (int err = platform::Pipe(fds); err != 0) {
    throw Error(kExitSoftware, Cat("cannot make a pipe: ", std::strerror(err)));
  }
  Fd from(fds[0]), into(fds[1]);
  SandboxOutput r;
  // Read as it comes, never more than kMost: then the pipe closes and the command ends.
  std::thread reader([&] {
    char buf[65536];
    while (r.out.size() < kMost) {
      ssize_t n = ::read(from.get(), buf, sizeof buf);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) break;
      r.out.append(buf, static_cast<size_t>(n));
    }
    if (r.out.size() > kMost) r.out.resize(kMost);
    from.Close();
  });
  try {
    r.status = run(argv, in_fd < 0 ? null_in.get() : in_fd, into.get(),
                   with_err ? into.get() : null_out.get());
  } catch (...) {
    into.Close();
    reader.join();
    throw;
  }
  into.Close();
  reader.join();
  return r;
}

void RefreshSandboxRepository(const SandboxRun& run, const std::string& name) {
  std::string held = HeldRepositoryDir(name);
  std::string layer = SandboxRepositoryDir(name);
  std::string what = Cat("cannot read the branches of ", DisplayPath(held));
  std::map<std::string, std::string> host;  // refs/heads/X -> commit
  for (const auto& line : SplitLines(GitOut(
           {"--git-dir", held, "for-each-ref", "--format=%(refname) %(objectname)", "refs/heads/"},
           what))) {
    auto space = line.find(' ');
    if (space != std::string::npos) host[line.substr(0, space)] = line.substr(space + 1);
  }
  // HEAD as the file says it (a branch, or nothing the sandbox's repository takes).
  auto head_file = ReadFileIfExists(held + "/HEAD");
  std::string head = head_file && head_file->rfind("ref: refs/heads/", 0) == 0
                         ? std::string(Trim(head_file->substr(5)))
                         : "";
  // What the sandbox's repository last had of the host's, as it says.
  SandboxOutput had = RunCaptured(run, ScriptArgv("sh", "shared-git.sh", {"--refs", layer}));
  if (had.status != 0) {
    throw Error(
        kExitRemote,
        Cat("cannot read the sandbox's repository of '", name, "' (status ", had.status, ")"), {},
        {"see the sandbox's logs: ss health-check"});
  }
  std::map<std::string, std::string> theirs;
  bool exists = false;
  for (const auto& line : SplitLines(had.out)) {
    if (line == "exists") {
      exists = true;
      continue;
    }
    auto space = line.find(' ');
    if (space != std::string::npos) theirs[line.substr(0, space)] = line.substr(space + 1);
  }
  if (exists && theirs == host) return;
  // A bundle of what it lacks: every commit of the host's branches but those it has.
  TempDir tmp(SpoolDir(), "ss-held.");
  std::string bundle = tmp.path() + "/b.bundle";
  std::vector<std::string> args{"--git-dir", held, "bundle", "create", "-q", bundle, "--branches"};
  for (const auto& [ref, oid] : theirs) {
    if (oid.size() == 40 && oid.find_first_not_of("0123456789abcdef") == std::string::npos &&
        HostGit({"--git-dir", held, "cat-file", "-e", oid + "^{commit}"}).ok()) {
      args.push_back("^" + oid);
    }
  }
  if (!host.empty()) {
    ProcessResult made = HostGit(args);
    if (!made.ok() && made.err.find("empty bundle") == std::string::npos) {
      throw Error(kExitIoErr, Cat("cannot make a bundle of ", DisplayPath(held)),
                  {std::string(Trim(made.err))});
    }
  }
  if (!PathExists(bundle)) AtomicWrite(bundle, "", 0600);
  std::vector<std::string> script{layer, head};
  for (const auto& [ref, oid] : host) script.insert(script.end(), {ref, oid});
  Fd in(::open(bundle.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.ok()) throw Error(kExitIoErr, Cat("cannot read ", bundle, ": ", std::strerror(errno)));
  SandboxOutput done = RunCaptured(run, ScriptArgv("sh", "shared-git.sh", script), in.get(), true);
  int status = done.status;
  if (status != 0) {
    std::vector<std::string> said;
    for (const auto& line : SplitLines(done.out.substr(0, 4096))) said.push_back(Printable(line));
    throw Error(kExitRemote,
                Cat("cannot bring the sandbox's repository of '", name,
                    "' up to the host's branches (status ", status, ")"),
                said, {"see the sandbox's logs: ss health-check"});
  }
}

std::vector<std::string> HeldProjects() {
  std::vector<std::string> out;
  if (!IsDirectory(ProjectsDir())) return out;
  for (const auto& name : ListDir(ProjectsDir())) {
    std::string dir = Cat(ProjectsDir(), "/", name);
    struct stat st;
    if (::lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) ||
        PathExists(Cat(CopyProjectsDir(), "/", name))) {
      continue;
    }
    if (HeldGitDirOf(dir)) out.push_back(name);
  }
  return out;
}

bool AddHeldRemote(const std::string& name, const std::string& remote, const std::string& url) {
  return PlainRemoteUrl(url) &&
         HostGit({"--git-dir", HeldRepositoryDir(name), "remote", "add", remote, url}).ok();
}

void RemoveHeldRepository(const std::string& name) {
  ::unlink(Cat(RepositoriesDir(), "/.left-", name).c_str());
  std::string held = HeldRepositoryDir(name);
  struct stat st;
  if (::lstat(held.c_str(), &st) == 0 && S_ISDIR(st.st_mode)) RemoveTree(held);
}

}  // namespace ss
