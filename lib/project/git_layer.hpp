// A working copy's git layer of its own: the agent uses git fully in its copy
// (~/copy-projects/NAME/.git, on the sandbox's disk), and its commits come back to the host as
// objects and refs only, never as files the host's git obeys.
//
// - Seeded from the host: the first time a copy is there without a repository, and the host
//   folder is one with commits, ss makes a bundle of its branches and tags on the host and the
//   sandbox fetches it into the copy (HEAD on the host's branch, the index from it; the copy's
//   files are left as they are). `.git` must be in sync.exclude (the default), which keeps syncs
//   from touching it.
// - Fetched back (`ss fetch`, and at the end of each session in the copy): the host's git fetches
//   the copy's branches into refs/remotes/sandbox/BRANCH ("sandbox/BRANCH"), with git-upload-pack
//   run in the sandbox over ss's SSH (the ext:: transport of ss-sync --git-transport): nothing of
//   the sandbox's git configuration or hooks is read or run on the host, every object is checked
//   (fetch.fsckObjects) and the pack is bounded by sync.max_size. A host branch the sandbox's
//   commits only add to is fast-forwarded (its worktree too when it is checked out and has no
//   changes not committed); otherwise they stay in sandbox/BRANCH, and a line says why: the host
//   branch moved, the commits change files the host runs or obeys on its own (the list of
//   host_exec.hpp, as ss apply without --allow-exec), or, for the checked-out branch, they would
//   replace files git does not track there, or write more than sync.max_size. Commits the
//   sandbox gave before and no longer has are kept in refs/sandbox-kept/COMMIT (no branch: a new
//   copy's seed never takes them).
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace ss {

class Config;
class SshConnection;
struct CopySource;

// Seeds the copy's repository as above; false when there was nothing to do (the copy has one, the
// host folder has no commits, or sync.exclude leaves .git in syncs). Throws ss::Error(74) when
// the host's git cannot make the bundle, 255 when the sandbox cannot take it.
bool SeedGitLayer(SshConnection& conn, const Config& config, const CopySource& source);

struct FetchedBranch {
  enum class Outcome {
    kFastForwarded,  // the host branch now points at the sandbox's commit
    kNew,            // the host has no such branch: in sandbox/NAME only
    kKept,           // the host branch moved, or may not be moved (`why`): in sandbox/NAME
    kSaved,          // commits the sandbox gave before and no longer has: ref `why` keeps them
  };
  std::string name;
  Outcome outcome = Outcome::kNew;
  std::string from, to;  // commit ids: the host branch before (empty: none), the sandbox's
  int commits = 0;       // commits the host branch (or, for a new one, no host branch) lacked
  std::string why;       // kKept: why, and the command that takes them; kSaved: the branch
};

struct FetchReport {
  bool repository = false;              // the copy has a repository of its own
  std::vector<FetchedBranch> branches;  // those with commits the host lacked
};

// Where a sandbox's repository of its own is, and the host checkout its commits go to.
struct LayerPlace {
  std::string host_dir;     // the host's checkout
  std::string sandbox_git;  // the sandbox's git directory
  std::string what;         // "the working copy of X", "the sandbox's repository of 'P'"
  // The checkout is the sandbox's files too (a shared project, held_repository.hpp): moving its
  // branch writes nothing there; the index follows, when nothing is staged.
  bool shared = false;
};
LayerPlace CopyLayer(const CopySource& source);
LayerPlace SharedLayer(const std::string& project, const std::string& host_dir);

// The command that lists the sandbox's branches ("refs/heads/X\tCOMMIT" lines), and whether,
// by what it printed, a fetch would bring nothing: each branch is what the last fetch took and a
// branch of the host's at the same commit. (Only compared: a listing that lies makes a fetch
// bring nothing the sandbox did not offer.)
std::vector<std::string> LayerBranchesArgv(const LayerPlace& place);
bool NothingToFetch(const LayerPlace& place, const std::string& listing);

// ss fetch: the sandbox's commits into the host folder's repository, as above. Throws
// ss::Error (66) when the host folder is not a git repository, 255 when the fetch fails (the
// sandbox's fault: git's words, made printable, and no branch of the host's moved).
FetchReport FetchGitLayer(SshConnection& conn, const Config& config, const LayerPlace& place,
                          const std::string& sandbox);

// What a fetch did, one line per branch ("main: fast-forwarded by 3 commits (1a2b3c4..5d6e7f8)");
// none when the sandbox had nothing new.
std::vector<std::string> FetchLines(const FetchReport& report);

// The folder inside project (or folder) `dir` that its repository's core.hooksPath names, as a
// path relative to `dir` ("githooks", ".config/hooks"); nullopt when it names none, or one
// elsewhere. (git runs hooks from there, relative paths from the top of the working tree.)
std::optional<std::string> HooksFolderIn(const std::string& dir);

// The sandbox side of that fetch, run by git as its ext:: transport: `ss-sync --git-transport
// SERVICE SANDBOX GITDIR`. Only git-upload-pack of the repository of a working copy or of a
// held shared project; stdin and stdout are git's. Returns upload-pack's exit status.
int RunGitTransport(const std::vector<std::string>& args);

}  // namespace ss
