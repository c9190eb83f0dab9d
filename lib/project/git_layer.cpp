#include "git_layer.hpp"

#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <memory>
#include <thread>

#include "config.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "held_repository.hpp"
#include "host_exec.hpp"
#include "paths.hpp"
#include "platform.hpp"
#include "process.hpp"
#include "project.hpp"
#include "provision.hpp"
#include "resources.hpp"
#include "sandbox.hpp"
#include "shell_quote.hpp"
#include "size.hpp"
#include "ssh.hpp"
#include "strings.hpp"
#include "transfer.hpp"
#include "working_copy.hpp"

namespace ss {
namespace {

constexpr const char* kSandboxRefs = "refs/remotes/sandbox/";
constexpr const char* kKeptRefs = "refs/sandbox-kept/";

// The host's git in `dir`. Under sudo, ss (root) leaves projects to the user who ran it (see
// ProjectsOwner): git must still accept this one repository, and what it writes is given back
// to its owner (GiveBack).
std::vector<std::string> GitArgv(const std::string& dir, std::vector<std::string> args) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0 && st.st_uid != ::geteuid()) {
    args.insert(args.begin(), {"-c", Cat("safe.directory=", dir)});
  }
  // Never into a submodule's folder (the sandbox's repository, in a shared project).
  args.insert(args.begin(),
              {"-c", "submodule.recurse=false", "-c", "fetch.recurseSubmodules=false", "-c",
               "diff.ignoreSubmodules=all", "-c", "status.submoduleSummary=false"});
  // A held repository is named, never found through the .git file the sandbox can write.
  if (auto held = HeldGitDirOf(dir))
    args.insert(args.begin(), {"--git-dir", *held, "--work-tree", dir});
  args.insert(args.begin(), {"git", "-C", dir});
  return args;
}

void GiveBack(const std::string& dir, const std::string& path) {
  if (::geteuid() != 0) return;
  // A held repository is the projects' owner's: never whoever owns what stands at `dir` (the
  // sandbox may have put a link there, to anyone's folder).
  if (HeldGitDirOf(dir)) {
    Owner o = ProjectsIds();
    ChownTree(path, o.uid, o.gid);
    return;
  }
  struct stat st;
  if (::lstat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid != 0) {
    ChownTree(path, st.st_uid, st.st_gid);
  }
}

// Its stdout, or nullopt when it says no (a ref that is not there).
std::optional<std::string> Git(const std::string& dir, std::vector<std::string> args) {
  ProcessResult r = Run(GitArgv(dir, std::move(args)));
  if (!r.ok()) return std::nullopt;
  return std::string(Trim(r.out));
}

std::string GitChecked(const std::string& dir, std::vector<std::string> args,
                       std::string_view what) {
  return std::string(Trim(RunChecked(GitArgv(dir, std::move(args)), what, {}, kExitIoErr)));
}

bool IsAncestor(const std::string& dir, const std::string& a, const std::string& b) {
  return Git(dir, {"merge-base", "--is-ancestor", a, b}).has_value();
}

int CountCommits(const std::string& dir, std::vector<std::string> range) {
  range.insert(range.begin(), {"rev-list", "--count"});
  return std::stoi(Git(dir, range).value_or("0"));
}

// ext:: splits its command on spaces: a space in an argument is "% ", a percent sign "%%".
std::string ExtWord(std::string_view word) {
  std::string out;
  for (char c : word) {
    if (c == '%' || c == ' ') out += '%';
    out += c;
  }
  return out;
}

// The repository of a working copy (~/copy-projects/NAME/.git) or of a held shared project
// (~/repositories/NAME), and nothing else.
bool IsLayerPath(const std::string& path) {
  auto named = [&](const std::string& root, const std::string& tail) {
    if (path.rfind(root, 0) != 0 || path.size() < root.size() + tail.size() ||
        path.compare(path.size() - tail.size(), tail.size(), tail) != 0) {
      return false;
    }
    std::string name = path.substr(root.size(), path.size() - root.size() - tail.size());
    return !name.empty() &&
           name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
  };
  return named(Dirname(CopyDir("x")) + "/", "/.git") ||
         named(Dirname(SandboxRepositoryDir("x")) + "/", "");
}

// Whether checking out `path` (new to git) would replace something of the user's: the path
// itself, or a file or link where it needs a folder.
bool InTheWay(const std::string& dir, const std::string& path) {
  std::string at = dir;
  for (const std::string& part : Split(path, '/')) {
    at += "/" + part;
    struct stat st;
    if (::lstat(at.c_str(), &st) != 0) return false;
    if (!S_ISDIR(st.st_mode)) return true;
  }
  return true;
}

// Why `from`..`to` may not move a host branch, or nullopt. Never when its commits change files
// the host runs or obeys on its own (as ss apply without --allow-exec); for the checked-out
// branch also never over files the user has there that git does not track (ignored ones
// included: git would replace them), nor past sync.max_size written into the checkout.
std::optional<std::string> WhyNotMove(const std::string& dir, const std::string& from,
                                      const std::string& to, bool checked_out,
                                      const HostExecRules& rules, int64_t max_size,
                                      const std::string& take) {
  std::string raw =
      GitChecked(dir, {"diff-tree", "-r", "-z", "--no-renames", from, to}, "cannot compare");
  std::vector<std::string> fields = Split(raw, '\0');
  std::vector<std::string> exec, untracked, blobs, gitlinks;
  std::vector<std::pair<std::string, std::string>> links;  // object, path
  for (size_t i = 0; i + 1 < fields.size(); i += 2) {
    // ":OLDMODE NEWMODE OLDSHA NEWSHA STATUS", then the path.
    std::vector<std::string> meta = Split(fields[i], ' ');
    const std::string& path = fields[i + 1];
    if (meta.size() < 5 || meta[4].empty()) continue;
    char status = meta[4][0];
    if (status == 'D') continue;
    if (auto what = rules.Why(path)) exec.push_back(Cat(Printable(path), " (", *what, ")"));
    if (checked_out && meta[0] == ":000000" && InTheWay(dir, path)) {
      untracked.push_back(Printable(path));
    }
    if (meta[1] == "120000") links.push_back({meta[3], path});
    if (meta[1] == "160000") gitlinks.push_back(Printable(path));
    if (meta[1].rfind("100", 0) == 0 || meta[1] == "120000") blobs.push_back(meta[3]);
  }
  auto some = [](const std::vector<std::string>& v) {
    std::vector<std::string> head(v.begin(), v.begin() + std::min<size_t>(v.size(), 5));
    return Cat(Join(head, ", "), v.size() > 5 ? Cat(" and ", v.size() - 5, " more") : "");
  };
  if (!gitlinks.empty()) {
    // A submodule's entry makes the host's git enter the folder there, and obey the repository
    // it finds (the sandbox's, in a shared project).
    return Cat("its commits add submodule entries: ", some(gitlinks), "; read them (git diff ",
               from.substr(0, 7), " ", take, "), then: git merge ", take);
  }
  if (!exec.empty()) {
    return Cat("its commits change files the host runs or obeys on its own: ", some(exec),
               "; read them (git diff ", from.substr(0, 7), " ", take, "), then: git merge ", take);
  }
  // A link whose target is absolute, climbs with "..", or names a .git: what ss apply would
  // not write (it resolves links against the tree; a checkout does not).
  std::vector<std::string> out;
  for (const auto& [object, path] : links) {
    std::string target = Git(dir, {"cat-file", "blob", object}).value_or("/");
    std::vector<std::string> parts = Split(target, '/');
    bool leaves = target.empty() || target[0] == '/' ||
                  std::any_of(parts.begin(), parts.end(),
                              [](const std::string& p) { return p == ".." || IsGitName(p); });
    if (leaves) out.push_back(Cat(Printable(path), " -> ", Printable(target)));
  }
  if (!out.empty()) {
    return Cat("its commits bring links that lead out of the project or into .git: ", some(out),
               "; read them (git diff ", from.substr(0, 7), " ", take, "), then: git merge ", take);
  }
  if (!checked_out) return std::nullopt;
  if (!untracked.empty()) {
    return Cat("its commits bring files you have there and git does not track: ", some(untracked),
               "; move them aside, then: git merge --ff-only ", take);
  }
  ProcessOptions o;
  o.input = Join(blobs, "\n") + "\n";
  int64_t bytes = 0;
  if (!blobs.empty()) {
    ProcessResult sizes = Run(GitArgv(dir, {"cat-file", "--batch-check=%(objectsize)"}), o);
    for (const auto& line : SplitLines(sizes.out)) bytes += ParseDecimal(line).value_or(0);
  }
  if (max_size >= 0 && bytes > max_size) {
    return Cat("its commits would write ", FormatSizeHuman(bytes), " into the checkout, more than ",
               "sync.max_size (", FormatSizeHuman(max_size), "); then: git merge --ff-only ", take);
  }
  return std::nullopt;
}

// The sandbox's branches as LayerBranchesArgv lists them, named as the host keeps them
// ("refs/remotes/sandbox/X\tCOMMIT" lines, as Git() returns them: no newline at the end).
std::string AsSandboxRefs(const std::string& listing) {
  std::vector<std::string> out;
  for (const auto& line : SplitLines(listing)) {
    if (line.rfind("refs/heads/", 0) != 0 || line.rfind("refs/heads/HEAD\t", 0) == 0) continue;
    out.push_back(Cat(kSandboxRefs, line.substr(11)));
  }
  return Join(out, "\n");
}

// Whether each branch the sandbox lists is a branch of the host's already, at the same commit,
// by `heads` ("refs/heads/X\tCOMMIT" lines).
bool AllBranchesThere(const std::vector<std::string>& heads, const std::string& listing) {
  for (const auto& line : SplitLines(listing)) {
    if (line.rfind("refs/heads/HEAD\t", 0) == 0) continue;
    if (std::find(heads.begin(), heads.end(), line) == heads.end()) return false;
  }
  return true;
}

}  // namespace

std::optional<std::string> HooksFolderIn(const std::string& dir) {
  if (!HeldGitDirOf(dir) && !IsCheckout(dir)) return std::nullopt;
  std::string path = Git(dir, {"config", "--get", "core.hooksPath"}).value_or("");
  if (path.empty() || path.front() == '~') return std::nullopt;
  if (path.front() == '/') {
    bool inside = false;
    for (const std::string& top : {dir, RealPath(dir)}) {
      if (!top.empty() && path.rfind(top + "/", 0) == 0) {
        path = path.substr(top.size() + 1);
        inside = true;
        break;
      }
    }
    if (!inside) return std::nullopt;
  }
  std::vector<std::string> parts;
  for (const std::string& part : Split(path, '/')) {
    if (part.empty() || part == ".") continue;
    if (part != "..") {
      parts.push_back(part);
    } else if (parts.empty()) {
      return std::nullopt;  // above the top
    } else {
      parts.pop_back();
    }
  }
  if (parts.empty()) return std::nullopt;
  return Join(parts, "/");
}

std::vector<std::string> LayerBranchesArgv(const LayerPlace& place) {
  return {"git",
          "--git-dir",
          place.sandbox_git,
          "for-each-ref",
          "--format=%(refname)%09%(objectname)",
          "refs/heads/"};
}

bool NothingToFetch(const LayerPlace& place, const std::string& listing) {
  // The host's branches and what the last fetch took, in one listing.
  std::vector<std::string> heads, given;
  for (const auto& line :
       SplitLines(Git(place.host_dir, {"for-each-ref", "--format=%(refname)%09%(objectname)",
                                       "refs/heads/", kSandboxRefs})
                      .value_or(""))) {
    (line.rfind(kSandboxRefs, 0) == 0 ? given : heads).push_back(line);
  }
  return AsSandboxRefs(listing) == Join(given, "\n") && AllBranchesThere(heads, listing);
}

bool SeedGitLayer(SshConnection& conn, const Config& config, const CopySource& source) {
  std::vector<std::string> excludes = SyncExcludes(config);
  if (std::find(excludes.begin(), excludes.end(), ".git") == excludes.end()) return false;
  if (!IsCheckout(source.host_dir)) return false;
  if (Git(source.host_dir, {"for-each-ref", "--count=1", "refs/heads", "refs/tags"})
          .value_or("")
          .empty()) {
    return false;
  }
  std::string copy = CopyDir(source.name);
  if (conn.Exec({"test", "-e", copy + "/.git"}).status == 0) return false;
  std::string head =
      Git(source.host_dir, {"symbolic-ref", "-q", "HEAD"})
          .value_or(Git(source.host_dir, {"rev-parse", "-q", "--verify", "HEAD"}).value_or(""));
  TempDir tmp(SpoolDir(), "ss-seed.");
  std::string bundle = tmp.path() + "/seed.bundle";
  GitChecked(source.host_dir, {"bundle", "create", "-q", bundle, "--branches", "--tags"},
             Cat("cannot make a bundle of the repository in ", source.host_dir));
  Fd in(::open(bundle.c_str(), O_RDONLY | O_CLOEXEC));
  if (!in.ok()) throw Error(kExitIoErr, Cat("cannot read ", bundle, ": ", std::strerror(errno)));
  StreamOptions so;
  so.in_fd = in.get();
  so.out_fd = -1;
  so.max_err = 64 * 1024;
  int status = conn.ExecStream(ScriptArgv("sh", "git-layer.sh", {copy, head}), so);
  if (status != 0) {
    throw Error(kExitRemote,
                Cat("cannot give the working copy of ", source.word,
                    " its repository in the sandbox (status ", status, ")"),
                {}, {"see the sandbox's logs: ss health-check"});
  }
  return true;
}

LayerPlace CopyLayer(const CopySource& source) {
  return {source.host_dir, CopyDir(source.name) + "/.git", Cat("the working copy of ", source.word),
          false};
}

LayerPlace SharedLayer(const std::string& project, const std::string& host_dir) {
  return {host_dir, SandboxRepositoryDir(project),
          Cat("the sandbox's repository of '", project, "'"), true};
}

FetchReport FetchGitLayer(SshConnection& conn, const Config& config, const LayerPlace& place,
                          const std::string& sandbox) {
  FetchReport report;
  ExecResult has = conn.Exec({"test", "-d", place.sandbox_git});
  if (has.status == 1) return report;
  if (has.status != 0) {
    throw Error(kExitRemote, Cat("cannot tell whether ", place.what,
                                 " has a repository (exit status ", has.status, ")"));
  }
  report.repository = true;
  const std::string& dir = place.host_dir;
  // A held repository is named, never looked for: whatever the sandbox has put at .git this
  // instant (its folder guard puts the file back), the commits go there.
  if (!HeldGitDirOf(dir) && !IsCheckout(dir)) {
    throw Error(kExitNoInput,
                Cat(DisplayPath(dir),
                    " is not a git repository: the sandbox's "
                    "commits have nowhere to go"),
                {}, {Cat("make it one first: git -C ", ShellQuote(dir), " init")});
  }
  std::string url = Cat("ext::", ExtWord(ExecutableDir() + "/ss-sync"), " --git-transport %S ",
                        ExtWord(sandbox), " ", ExtWord(place.sandbox_git));
  // What the sandbox gave before: a commit it no longer has (rewritten, or its repository made
  // again) is not dropped with its ref.
  std::string given =
      Git(dir, {"for-each-ref", "--format=%(refname)%09%(objectname)", kSandboxRefs}).value_or("");
  // Its branches as it lists them, over the connection already open: the same as the last fetch
  // took, there is nothing to fetch (the fetch itself opens a connection of its own). What it
  // says is only compared: anything else, and the fetch decides.
  ExecOptions ask;
  ask.max_output = 1 << 20;
  ExecResult listed = conn.Exec(LayerBranchesArgv(place), ask);
  bool same = listed.status == 0 && !listed.over_limit && AsSandboxRefs(listed.out) == given;
  if (same &&
      AllBranchesThere(SplitLines(Git(dir, {"for-each-ref", "--format=%(refname)%09%(objectname)",
                                            "refs/heads/"})
                                      .value_or("")),
                       listed.out)) {
    return report;  // (what the last fetch took is `given`, compared above)
  }
  ProcessResult fetched;
  if (!same) {
    fetched = Run(GitArgv(
        dir,
        {"-c", "protocol.ext.allow=always", "-c", "fetch.fsckObjects=true", "-c",
         "transfer.fsckObjects=true", "fetch", "--quiet", "--recurse-submodules=no", "--no-tags",
         "--no-write-fetch-head", "--prune", url, Cat("+refs/heads/*:", kSandboxRefs, "*"),
         // (a branch called HEAD would make "sandbox" itself name the sandbox's choice)
         "^refs/heads/HEAD"}));
  }
  std::string git_dir = GitDirOf(dir);
  GiveBack(dir, git_dir);
  if (!same && !fetched.ok()) {
    std::vector<std::string> details;
    for (const auto& line : SplitLines(fetched.err)) details.push_back(Printable(line));
    if (details.size() > 20) details.erase(details.begin(), details.end() - 20);
    throw Error(kExitRemote, Cat("cannot fetch the commits of ", place.what), details,
                {"the host's branches are as they were"});
  }
  for (const auto& line : SplitLines(given)) {
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    std::string oid = line.substr(tab + 1);
    if (Git(dir, {"rev-list", "-n1", oid, "--not", "--branches", Cat("--glob=", kSandboxRefs, "*"),
                  Cat("--glob=", kKeptRefs, "*")})
            .value_or("")
            .empty()) {
      continue;
    }
    FetchedBranch b;
    b.name = line.substr(std::strlen(kSandboxRefs), tab - std::strlen(kSandboxRefs));
    b.outcome = FetchedBranch::Outcome::kSaved;
    b.to = oid;
    b.commits = CountCommits(dir, {oid, "--not", "--branches", Cat("--glob=", kSandboxRefs, "*")});
    // Named by the commit: never two the same, never a branch (a new copy's seed takes none).
    std::string keep = Cat(kKeptRefs, oid);
    b.why = keep;
    if (!Git(dir, {"update-ref", keep, oid})) {
      b.why = Cat("could not keep them in ", keep, "; they are in git's reflog for a while");
    }
    report.branches.push_back(b);
  }
  HostExecRules rules = HostExecRules::From(config, dir);
  int64_t max_size = config.Int("sync.max_size");
  std::string current = Git(dir, {"symbolic-ref", "-q", "HEAD"}).value_or("");
  // Branches checked out in the host's other worktrees (git worktree add): moved only by git
  // there, with that checkout.
  std::vector<std::string> elsewhere;
  for (const auto& line : SplitLines(Git(dir, {"worktree", "list", "--porcelain"}).value_or(""))) {
    if (line.rfind("branch ", 0) == 0 && line.substr(7) != current)
      elsewhere.push_back(line.substr(7));
  }
  std::string refs =
      Git(dir, {"for-each-ref", "--format=%(refname)%09%(objectname)", kSandboxRefs}).value_or("");
  for (const auto& line : SplitLines(refs)) {
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    FetchedBranch b;
    b.name = line.substr(std::string_view(kSandboxRefs).size(), tab - std::strlen(kSandboxRefs));
    b.to = line.substr(tab + 1);
    std::string branch = Cat("refs/heads/", b.name);
    // As the commands below name it: quoted, since a branch the sandbox named may hold $(...).
    std::string shown = ShellQuote(Cat("sandbox/", b.name));
    b.from = Git(dir, {"rev-parse", "-q", "--verify", branch + "^{commit}"}).value_or("");
    if (b.from.empty()) {
      b.commits = CountCommits(dir, {b.to, "--not", "--branches"});
      if (b.commits == 0) continue;
      b.outcome = FetchedBranch::Outcome::kNew;
      report.branches.push_back(b);
      continue;
    }
    if (b.from == b.to || IsAncestor(dir, b.to, b.from)) continue;  // nothing the host lacks
    b.commits = CountCommits(dir, {Cat(b.from, "..", b.to)});
    std::optional<std::string> why;
    if (!IsAncestor(dir, b.from, b.to)) {
      b.outcome = FetchedBranch::Outcome::kKept;
      b.why = Cat("the host's ", b.name, " has commits of its own; merge them: git merge ", shown);
    } else if (std::find(elsewhere.begin(), elsewhere.end(), branch) != elsewhere.end()) {
      b.outcome = FetchedBranch::Outcome::kKept;
      b.why = Cat(b.name,
                  " is checked out in another worktree of the host's; there: git merge "
                  "--ff-only ",
                  shown);
    } else if ((why = WhyNotMove(dir, b.from, b.to, current == branch && !place.shared, rules,
                                 max_size, shown))) {
      b.outcome = FetchedBranch::Outcome::kKept;
      b.why = *why;
    } else if (current != branch) {
      bool moved = Git(dir, {"update-ref", "-m", "ss fetch: fast-forward from the sandbox", branch,
                             b.to, b.from})
                       .has_value();
      b.outcome = moved ? FetchedBranch::Outcome::kFastForwarded : FetchedBranch::Outcome::kKept;
      if (!moved) b.why = Cat("the host's ", b.name, " moved meanwhile; git merge ", shown);
      GiveBack(dir, git_dir);
    } else if (place.shared) {
      // The files are there already: the branch moves, and the index with it.
      if (!Git(dir, {"diff", "--cached", "--quiet"})) {
        b.outcome = FetchedBranch::Outcome::kKept;
        b.why = Cat(b.name, " is checked out with changes staged; commit or unstage them, then: ",
                    "git merge --ff-only ", shown);
      } else if (Git(dir, {"update-ref", "-m", "ss fetch: fast-forward from the sandbox", branch,
                           b.to, b.from}) &&
                 Git(dir, {"reset", "-q"})) {
        b.outcome = FetchedBranch::Outcome::kFastForwarded;
      } else {
        b.outcome = FetchedBranch::Outcome::kKept;
        b.why = Cat("the host's ", b.name, " moved meanwhile; git merge ", shown);
      }
      GiveBack(dir, git_dir);
    } else if (!Git(dir, {"status", "--porcelain", "--untracked-files=no"}).value_or("?").empty()) {
      b.outcome = FetchedBranch::Outcome::kKept;
      b.why = Cat(b.name,
                  " is checked out with changes not committed; commit or stash them, then: "
                  "git merge --ff-only ",
                  shown);
    } else if (Git(dir, {"merge", "--ff-only", "-q", b.to})) {
      GiveBack(dir, dir);
      b.outcome = FetchedBranch::Outcome::kFastForwarded;
    } else {
      b.outcome = FetchedBranch::Outcome::kKept;
      b.why = Cat("git could not fast-forward the checkout of ", b.name, ": git merge --ff-only ",
                  shown);
    }
    report.branches.push_back(b);
  }
  return report;
}

std::vector<std::string> FetchLines(const FetchReport& report) {
  std::vector<std::string> lines;
  for (const auto& b : report.branches) {
    std::string commits = Cat(b.commits, b.commits == 1 ? " commit" : " commits");
    std::string name = Printable(b.name);
    switch (b.outcome) {
      case FetchedBranch::Outcome::kFastForwarded:
        lines.push_back(Cat(name, ": fast-forwarded by ", commits, " (", b.from.substr(0, 7), "..",
                            b.to.substr(0, 7), ")"));
        break;
      case FetchedBranch::Outcome::kNew:
        lines.push_back(Cat(name, ": new in the sandbox, ", commits, ": ",
                            Printable(ShellQuote(Cat("sandbox/", b.name)))));
        break;
      case FetchedBranch::Outcome::kKept:
        lines.push_back(Cat(name, ": ", commits, " left in ",
                            Printable(ShellQuote(Cat("sandbox/", b.name))), ": ",
                            Printable(b.why)));
        break;
      case FetchedBranch::Outcome::kSaved:
        lines.push_back(Cat(name, ": the sandbox no longer has ", commits, " it gave before: ",
                            b.why.rfind("refs/", 0) == 0 ? Cat("kept in ", b.why) : b.why));
        break;
    }
  }
  return lines;
}

namespace {

// What the sandbox's upload-pack may do to the host's fetch: advertise this many branches at most
// (each one a ref and a reflog on the host), and fall silent this long (it sends a keepalive
// every 5 s while it prepares a pack).
constexpr int kMaxBranches = 1000;
int SilentSeconds() {
  // (Shorter in the tests: SS_FETCH_SILENT_SECONDS.)
  const char* text = std::getenv("SS_FETCH_SILENT_SECONDS");
  std::optional<int64_t> s = ParseDecimal(text ? text : "");
  return s && *s > 0 && *s < 3600 ? static_cast<int>(*s) : 60;
}

// Copies upload-pack's output (from `in`) to git (stdout), reading the ref advertisement on its
// way (pkt-lines up to the first flush, protocol v0). Returns why it stopped early, or empty.
std::string Relay(int in) {
  std::string head;  // the advertisement, until its flush
  bool advertised = false;
  size_t at = 0;
  int branches = 0;
  char buf[65536];
  // A trickle is no better than silence: the whole fetch has ten times as long.
  auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10 * SilentSeconds());
  while (true) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
        deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      return Cat("the sandbox's git-upload-pack took longer than ", 10 * SilentSeconds(), " s");
    }
    struct pollfd p {
      in, POLLIN, 0
    };
    int wait = static_cast<int>(std::min<int64_t>(left.count(), SilentSeconds() * 1000));
    int ready = ::poll(&p, 1, wait);
    if (ready < 0 && errno == EINTR) continue;
    if (ready == 0 && wait < SilentSeconds() * 1000) continue;  // the deadline, said above
    if (ready == 0) {
      return Cat("the sandbox's git-upload-pack sent nothing for ", SilentSeconds(), " s");
    }
    ssize_t n = ::read(in, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return "";
    if (!advertised) {
      head.append(buf, static_cast<size_t>(n));
      while (!advertised && at + 4 <= head.size()) {
        size_t len = std::strtoul(head.substr(at, 4).c_str(), nullptr, 16);
        if (len == 0) {
          advertised = true;
          break;
        }
        if (len < 4 || at + len > head.size()) break;
        // Asked nothing else, upload-pack answers in protocol 0: its first line is a ref. A
        // "version" line (protocol 1 or 2, which the host's git would also follow) lists refs
        // where they are not counted.
        if (at == 0 && head.compare(4, 8, "version ") == 0) {
          return "the sandbox's git-upload-pack answered in a protocol it was not asked for";
        }
        if (head.find(" refs/heads/", at) < at + len && ++branches > kMaxBranches) {
          return Cat("the sandbox's repository has more than ", kMaxBranches, " branches");
        }
        at += len;
      }
    }
    try {
      WriteAll(1, std::string_view(buf, static_cast<size_t>(n)), "git's input");
    } catch (const Error&) {
      return "";  // git is gone: it says why
    }
  }
}

}  // namespace

int RunGitTransport(const std::vector<std::string>& args) {
  if (args.size() != 3 || args[0] != "git-upload-pack") {
    std::cerr << "ss-sync: --git-transport serves git-upload-pack of a sandbox's repository "
                 "only\n";
    return kExitUsage;
  }
  const std::string& name = args[1];
  const std::string& path = args[2];
  ValidateSandboxName(name);
  if (!IsLayerPath(path)) {
    std::cerr << "ss-sync: --git-transport: " << Printable(path)
              << " is not a sandbox's repository of a project\n";
    return kExitUsage;
  }
  Config config = Config::Load();
  Sandbox sandbox(name, config);
  std::unique_ptr<SshConnection> conn = sandbox.TryConnect();
  if (!conn) throw Error(kExitUnavailable, Cat("sandbox '", name, "' is not running"));
  int fds[2];
  if (int err = platform::Pipe(fds); err != 0) {
    throw Error(kExitSoftware, Cat("cannot make a pipe: ", std::strerror(err)));
  }
  Fd out(fds[0]), into(fds[1]);
  std::string stopped;
  std::atomic<bool> exec_done{false};
  sigset_t term;
  sigemptyset(&term);
  sigaddset(&term, SIGTERM);
  std::thread relay([&] {
    ::pthread_sigmask(SIG_BLOCK, &term, nullptr);  // the command's SIGTERM is the main thread's
    stopped = Relay(out.get());
    out.Close();  // what upload-pack writes from now on ends it (EPIPE)
    if (stopped.empty()) return;
    // git sees the end of the stream; the command in the sandbox is ended as an interrupt would
    // end it (ExecStream passes the first SIGTERM on, and closes the session on the second).
    ::close(1);
    ::kill(::getpid(), SIGTERM);
    for (int i = 0; i < 20 && !exec_done; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    if (!exec_done) ::kill(::getpid(), SIGTERM);
  });
  StreamOptions so;
  so.out_fd = into.get();
  so.max_output = config.Int("sync.max_size");
  so.out_over_limit = std::make_shared<bool>(false);
  so.max_err = 64 * 1024;
  int status = 255;
  std::optional<Error> failed;
  try {
    status = conn->ExecStream({"git-upload-pack", "--strict", path}, so);
  } catch (const Error& e) {
    failed = e;
  }
  // A SIGTERM the relay sends from now on stays pending, never ending this process.
  ::pthread_sigmask(SIG_BLOCK, &term, nullptr);
  exec_done = true;
  into.Close();
  relay.join();
  if (!stopped.empty()) throw Error(kExitRemote, stopped, {}, {"nothing was fetched"});
  if (failed) throw *failed;
  if (*so.out_over_limit) {
    throw TooLarge({config.Int("sync.max_size"), Cat("sandbox '", name, "'")}, "the fetch");
  }
  return status;
}

}  // namespace ss
