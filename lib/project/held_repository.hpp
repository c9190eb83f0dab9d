// A shared project's repository, held out of the sandbox's reach.
//
// A shared project's folder is the sandbox's too, so a repository inside it would be the
// sandbox's to change: a setting or a hook written there would run the next time the host's git
// (or a prompt, an editor) opens the folder. Its git directory therefore lives beside the
// projects folder, in $SS_HOME/repositories/NAME, which no sandbox is given, and the project's
// `.git` is a file that leads there by a relative path:
//
//   projects/NAME/.git     "gitdir: ../../repositories/NAME"
//
// Read on the host, it leads to $SS_HOME/repositories/NAME; read in the sandbox, where the projects
// folder is /home/sandbox/projects, to /home/sandbox/repositories/NAME: a repository of the
// sandbox's own, on its own disk, which ss makes from the host's branches and brings up to them
// before each session (RefreshSandboxRepository). The agent uses git fully there; its commits
// come to the host as objects and refs only, fetched by the host's git (git_layer.hpp), and the
// host's branch is fast-forwarded when it has not moved.
//
// The `.git` file is in the shared folder: the sandbox can rewrite or replace it. While the
// sandbox runs, its folder guard (folder_guard.hpp) puts it back as soon as the kernel reports a
// change, and ss does before and after every session in the project, setting aside whatever stood
// in its place (`.git.refused-TIME-RANDOM`) before the host's git is run there by ss; what the
// host's own git reads in the instant between is the window ss-project(1) states.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

class SshConnection;

std::string HeldRepositoryDir(const std::string& name);     // $SS_HOME/repositories/NAME
std::string SandboxRepositoryDir(const std::string& name);  // /home/sandbox/repositories/NAME
std::string HeldGitFile(const std::string& name);           // "gitdir: ../../repositories/NAME\n"

// Whether `dir` is a git checkout's top: it has a .git folder, or a .git file.
bool IsCheckout(const std::string& dir);
// The held repository of project folder `dir` (in the projects or copy-mode folder) whose .git
// is not a folder: decided by the project's name, never by what its .git file says (the sandbox
// may have written it). The host's git is run there with --git-dir and --work-tree.
std::optional<std::string> HeldGitDirOf(const std::string& dir);
// The git directory of checkout `dir`: its held repository, else dir/.git.
std::string GitDirOf(const std::string& dir);

struct Holding {
  enum class State {
    kNone,  // no repository
    kHeld,  // in $SS_HOME/repositories/NAME, the .git file leading there
    kLeft,  // a .git folder left in the project (`why`): the sandbox can change it
  };
  State state = State::kNone;
  std::string why;
  std::vector<std::string> said;  // what was done now, a line each
};

// Holds shared project `name`'s repository (its folder `dir`), as above:
//   - a .git folder ss can trust (`trusted`: one ss made, imported, or moved in from copy mode;
//     and every one the first time this version of ss runs) is moved to the repositories
//     folder whole (hooks and settings included), unless it has submodules, or that folder is
//     on another filesystem: then it is left (kLeft);
//   - any other .git folder, one that appeared in a shared folder and may be the sandbox's, is
//     set aside and never read on the host (git would follow its links, alternates and common
//     directory anywhere the user can read); a line says how to give it to ss by hand;
//   - a .git file that is not ss's, a link, or anything else in its place is set aside, and the
//     .git file put back.
// Throws ss::Error(74) when a file cannot be moved or written.
Holding HoldRepository(const std::string& dir, const std::string& name, bool trusted);

// Moves entry `name` of folder `dir_fd` (`dir`, for messages) aside, to NAME.refused-TIME-RANDOM
// there (a name no git reads), never over anything; returns where, shown. Throws ss::Error(74).
std::string MoveAside(int dir_fd, const std::string& dir, const std::string& name);
std::string MoveGitAside(int dir_fd, const std::string& dir);  // its .git

// A shared project being made in hidden folder `dir` (.new-NAME.NONCE, where no sandbox reaches
// when it can, on the projects folder's filesystem): its .git folder is moved beside the held
// repositories, under that folder's name, and its .git file written. Returns that place, for
// InstallStagedRepository once the project is in the projects folder (or RemoveStagedRepository
// if it cannot be put there).
std::string StageRepository(const std::string& dir, const std::string& name);
void InstallStagedRepository(const std::string& staged, const std::string& name);
void RemoveStagedRepository(const std::string& staged);
// A maker killed between putting the project in place and its repository leaves the repository
// staged: it is installed when its project is there (and no live maker holds that folder's lock)
// and no repository holds its name, else removed. One staged for an unfinished project (its
// hidden folder still there) is left to whoever collects that folder. `only`: that project's.
void SettleStagedRepositories(const std::string& only = "");

// The first time this version of ss opens a shared project: every project's .git folder is
// moved (HoldRepository, trusted), once.
void HoldAllRepositories();

// Before ss uses shared project `name` (its folder `dir`) with a sandbox, and after: the above,
// then HoldRepository (the .git folder found there not trusted), each line of what was done
// said as a warning, and one when the repository stays in the folder.
Holding HoldForUse(const std::string& dir, const std::string& name);

// Runs ARGV in the sandbox, its stdin, stdout and stderr the descriptors given; returns its exit
// status. A session runs it over the sandbox's shared connection when there is one
// (session_share.hpp), which costs no new connection.
using SandboxRun =
    std::function<int(const std::vector<std::string>& argv, int in_fd, int out_fd, int err_fd)>;
// Over `conn`.
SandboxRun RunOver(SshConnection& conn);

// What a command run so printed (stdout, and stderr `with_err`; up to 1 MiB, where the command is
// cut off), and its status; its stdin from `in_fd`, else empty.
struct SandboxOutput {
  int status = 255;
  std::string out;
};
SandboxOutput RunCaptured(const SandboxRun& run, const std::vector<std::string>& argv,
                          int in_fd = -1, bool with_err = false);

// Makes the sandbox's own repository of held project `name`, or brings
// its branches up to the host's: a branch the sandbox has not moved on its own follows the host's
// (its index too, when it is checked out and nothing is staged); one it has moved is left to the
// next fetch. One command in the sandbox when nothing changed, and a bundle of only what it
// lacks otherwise. Throws ss::Error(74) when the host's git fails, 255 when the sandbox does.
void RefreshSandboxRepository(const SandboxRun& run, const std::string& name);

// Whether `url` is an address git reaches over the network without running anything named in
// it: https://HOST/..., ssh://HOST/..., or USER@HOST:PATH; never a local path nor a
// "helper::" transport.
bool PlainRemoteUrl(std::string_view url);
// Gives held project `name`'s repository the remote `remote` at `url` (the one gh made in the
// sandbox's repository) when it is such an address. False when it is not, or git refuses.
bool AddHeldRemote(const std::string& name, const std::string& remote, const std::string& url);

// The shared projects whose repositories are held (by name).
std::vector<std::string> HeldProjects();

// Removes the held repository of a project that is gone (ss delete).
void RemoveHeldRepository(const std::string& name);

}  // namespace ss
