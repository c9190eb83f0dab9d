#include "git_layer.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <iostream>
#include <memory>

#include "config.hpp"
#include "error.hpp"
#include "fd.hpp"
#include "fs.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "project.hpp"
#include "provision.hpp"
#include "resources.hpp"
#include "sandbox.hpp"
#include "shell_quote.hpp"
#include "ssh.hpp"
#include "strings.hpp"
#include "transfer.hpp"
#include "working_copy.hpp"

namespace ss {
namespace {

constexpr const char* kSandboxRefs = "refs/remotes/sandbox/";

// The host's git in `dir`. Under sudo, ss (root) leaves projects to the user who ran it (see
// ProjectsOwner): git must still accept this one repository, and what it writes is given back
// to its owner (GiveBack).
std::vector<std::string> GitArgv(const std::string& dir, std::vector<std::string> args) {
  struct stat st;
  if (::stat(dir.c_str(), &st) == 0 && st.st_uid != ::geteuid()) {
    args.insert(args.begin(), {"-c", Cat("safe.directory=", dir)});
  }
  args.insert(args.begin(), {"git", "-C", dir});
  return args;
}

void GiveBack(const std::string& dir, const std::string& path) {
  struct stat st;
  if (::geteuid() == 0 && ::stat(dir.c_str(), &st) == 0 && st.st_uid != 0) {
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

bool IsCopyPath(const std::string& path) {
  std::string root = Dirname(CopyDir("x")) + "/";
  if (path.rfind(root, 0) != 0) return false;
  std::string name = path.substr(root.size());
  return !name.empty() &&
         name.find_first_not_of("abcdefghijklmnopqrstuvwxyz0123456789-") == std::string::npos;
}

}  // namespace

bool SeedGitLayer(SshConnection& conn, const Config& config, const CopySource& source) {
  std::vector<std::string> excludes = SyncExcludes(config);
  if (std::find(excludes.begin(), excludes.end(), ".git") == excludes.end()) return false;
  if (!IsDirectory(source.host_dir + "/.git")) return false;
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

FetchReport FetchGitLayer(SshConnection& conn, const CopySource& source,
                          const std::string& sandbox) {
  FetchReport report;
  std::string copy = CopyDir(source.name);
  ExecResult has = conn.Exec({"test", "-d", copy + "/.git"});
  if (has.status == 1) return report;
  if (has.status != 0) {
    throw Error(kExitRemote, Cat("cannot tell whether the working copy of ", source.word,
                                 " has a repository (exit status ", has.status, ")"));
  }
  report.repository = true;
  const std::string& dir = source.host_dir;
  if (!IsDirectory(dir + "/.git")) {
    throw Error(kExitNoInput,
                Cat(DisplayPath(dir),
                    " is not a git repository: the sandbox's "
                    "commits have nowhere to go"),
                {}, {Cat("make it one first: git -C ", ShellQuote(dir), " init")});
  }
  std::string url = Cat("ext::", ExtWord(ExecutableDir() + "/ss-sync"), " --git-transport %S ",
                        ExtWord(sandbox), " ", ExtWord(copy));
  ProcessResult fetched = Run(GitArgv(
      dir, {"-c", "protocol.ext.allow=always", "-c", "fetch.fsckObjects=true", "-c",
            "transfer.fsckObjects=true", "fetch", "--quiet", "--no-tags", "--no-write-fetch-head",
            "--prune", url, Cat("+refs/heads/*:", kSandboxRefs, "*")}));
  GiveBack(dir, dir + "/.git");
  if (!fetched.ok()) {
    std::vector<std::string> details;
    for (const auto& line : SplitLines(fetched.err)) details.push_back(Printable(line));
    if (details.size() > 20) details.erase(details.begin(), details.end() - 20);
    throw Error(kExitRemote, Cat("cannot fetch the commits of the working copy of ", source.word),
                details, {"the host's branches are as they were"});
  }
  std::string current = Git(dir, {"symbolic-ref", "-q", "HEAD"}).value_or("");
  std::string refs =
      Git(dir, {"for-each-ref", "--format=%(refname)%09%(objectname)", kSandboxRefs}).value_or("");
  for (const auto& line : SplitLines(refs)) {
    auto tab = line.find('\t');
    if (tab == std::string::npos) continue;
    FetchedBranch b;
    b.name = line.substr(std::string_view(kSandboxRefs).size(), tab - std::strlen(kSandboxRefs));
    b.to = line.substr(tab + 1);
    std::string branch = Cat("refs/heads/", b.name);
    std::string shown = Cat("sandbox/", b.name);
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
    if (!IsAncestor(dir, b.from, b.to)) {
      b.outcome = FetchedBranch::Outcome::kKept;
      b.why = Cat("the host's ", b.name, " has commits of its own; merge them: git merge ", shown);
    } else if (current != branch) {
      bool moved = Git(dir, {"update-ref", "-m", "ss fetch: fast-forward from the sandbox", branch,
                             b.to, b.from})
                       .has_value();
      b.outcome = moved ? FetchedBranch::Outcome::kFastForwarded : FetchedBranch::Outcome::kKept;
      if (!moved) b.why = Cat("the host's ", b.name, " moved meanwhile; git merge ", shown);
      GiveBack(dir, dir + "/.git");
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
        lines.push_back(Cat(name, ": new in the sandbox, ", commits, ": sandbox/", name));
        break;
      case FetchedBranch::Outcome::kKept:
        lines.push_back(
            Cat(name, ": ", commits, " left in sandbox/", name, ": ", Printable(b.why)));
        break;
    }
  }
  return lines;
}

int RunGitTransport(const std::vector<std::string>& args) {
  if (args.size() != 3 || args[0] != "git-upload-pack") {
    std::cerr << "ss-sync: --git-transport serves git-upload-pack of a working copy only\n";
    return kExitUsage;
  }
  const std::string& name = args[1];
  const std::string& path = args[2];
  ValidateSandboxName(name);
  if (!IsCopyPath(path)) {
    std::cerr << "ss-sync: --git-transport: " << Printable(path) << " is not a working copy\n";
    return kExitUsage;
  }
  Config config = Config::Load();
  Sandbox sandbox(name, config);
  std::unique_ptr<SshConnection> conn = sandbox.TryConnect();
  if (!conn) throw Error(kExitUnavailable, Cat("sandbox '", name, "' is not running"));
  StreamOptions so;
  so.max_output = config.Int("sync.max_size");
  so.out_over_limit = std::make_shared<bool>(false);
  so.max_err = 64 * 1024;
  int status = conn->ExecStream({"git-upload-pack", "--strict", path + "/.git"}, so);
  if (*so.out_over_limit) {
    throw TooLarge({config.Int("sync.max_size"), Cat("sandbox '", name, "'")}, "the fetch");
  }
  return status;
}

}  // namespace ss
