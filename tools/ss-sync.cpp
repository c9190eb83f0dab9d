// ss-sync: working copies and files. `ss sync`, `ss diff`, `ss apply`, `ss push` and `ss pull`
// come here.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <iostream>

#include "config.hpp"
#include "error.hpp"
#include "json_out.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "project.hpp"
#include "prompt.hpp"
#include "sandbox.hpp"
#include "strings.hpp"
#include "suggest.hpp"
#include "sync.hpp"
#include "tool.hpp"
#include "transfer.hpp"
#include "working_copy.hpp"

namespace po = boost::program_options;

namespace ss {
namespace {

constexpr const char* kUsage = R"(usage: ss-sync COMMAND [ARGS] [OPTIONS]

Working copies (projects.NAME.mode: copy) and files in and out of the sandbox.

Commands:
  sync [PROJECT]        refresh the working copy from the host project (rsync --delete,
                        leaving out sync.exclude); refuses to replace changes made in the
                        copy unless --force, which saves them first
  diff [PROJECT]        what changed in the working copy against the source (--stat)
  apply [PROJECT]       copy the working copy's changes into the host project (--yes)
  push LOCAL REMOTE     copy a file or directory into the sandbox
  pull REMOTE LOCAL     copy a file or directory out of the sandbox

PROJECT defaults to the project of the current directory. Relative REMOTE paths are relative
to the project's directory in the sandbox (--project, or the current directory's project),
else to the sandbox user's home.

Options:
  --sandbox NAME        the sandbox (default: $SS_SANDBOX, $CLAUDE_SANDBOX, super-sandbox)
  --project NAME        push, pull: the project relative paths start from
  --force               sync: replace changes made in the copy (saved first)
  -n, --dry-run         sync: show what would change, change nothing
  --stat                diff: a summary per file instead of the diff
  --timeout SECONDS     how long to wait for the sandbox to start (default 60)
  --json                sync: print one JSON document (see ss-json(7))
  -y, --yes             apply: do not ask for confirmation
  -h, --help            show this help
)";

struct Options {
  std::vector<std::string> words;
  std::string sandbox;
  std::string project;
  bool force = false;
  bool dry_run = false;
  bool stat = false;
  int timeout = 60;
  bool json = false;
  bool yes = false;
  bool help = false;
};

Options ParseArgs(const Args& args) {
  Options o;
  po::options_description desc;
  desc.add_options()("sandbox", po::value(&o.sandbox))("project", po::value(&o.project))(
      "force", po::bool_switch(&o.force))("dry-run,n", po::bool_switch(&o.dry_run))(
      "stat", po::bool_switch(&o.stat))("timeout", po::value(&o.timeout))(
      "json", po::bool_switch(&o.json))("yes,y", po::bool_switch(&o.yes))(
      "help,h", po::bool_switch(&o.help))("words", po::value(&o.words));
  ParseWithWords(args, desc);
  if (o.timeout <= 0) {
    throw Error(kExitUsage, Cat("--timeout must be a positive number of seconds, not ", o.timeout));
  }
  return o;
}

// The project of the current directory, if it is inside the projects folder.
std::string ProjectOfCwd() {
  char buf[4096];
  if (!::getcwd(buf, sizeof buf)) return "";
  std::string cwd = buf, base = ProjectsDir();
  char real[4096];
  if (::realpath(base.c_str(), real)) base = real;
  if (cwd.rfind(base + "/", 0) != 0) return "";
  std::string rest = cwd.substr(base.size() + 1);
  std::string name = rest.substr(0, rest.find('/'));
  return IsValidProjectName(name) ? name : "";
}

std::string RequireProject(std::string name, const std::string& verb) {
  if (name.empty()) name = ProjectOfCwd();
  if (name.empty()) {
    throw Error(kExitUsage, Cat("which project? name it: ss ", verb, " PROJECT"), {},
                {"or run it from inside the project's folder"});
  }
  ValidateProjectName(name);
  ProjectStore store;
  if (!store.Find(name)) throw store.NotFoundError(name);
  return name;
}

void RequireCopyMode(const Config& config, const std::string& project) {
  if (!IsCopyMode(config, project)) {
    throw Error(kExitUsage, Cat("project '", project, "' is not in working-copy mode"),
                {"the agent works in the shared folder itself: there is no copy to sync"},
                {Cat("switch it: ss config set projects.", project, ".mode copy")});
  }
}

class Connection {
 public:
  Connection(const Options& o, const Config& config)
      : o_(o), sandbox_(ResolveSandboxName(o.sandbox), config) {}
  Sandbox& sandbox() { return sandbox_; }
  SshConnection& Get() {
    if (conn_) return *conn_;
    conn_ = sandbox_.TryConnect();
    if (conn_) return *conn_;
    if (sandbox_.State() != SandboxState::kRunning) Note("Starting VM...");
    Progress progress(Cat("sandbox ", sandbox_.name()));
    conn_ = sandbox_.EnsureRunning(progress, std::chrono::seconds(o_.timeout));
    return *conn_;
  }

 private:
  const Options& o_;
  Sandbox sandbox_;
  std::unique_ptr<SshConnection> conn_;
};

std::string Count(size_t n, std::string_view one, std::string_view many) {
  return Cat(n, " ", n == 1 ? one : many);
}

std::string SandboxLabel(Connection& c) { return Cat("sandbox '", c.sandbox().name(), "'"); }

// What the crossing refused, on stderr; 1 when there was any (the rest was written).
int ReportRefused(const std::vector<Refusal>& refused, std::string_view fate) {
  if (refused.empty()) return 0;
  Warn(Cat("refused ", Count(refused.size(), "entry", "entries"), " from the sandbox (", fate,
           "):"));
  for (const auto& r : refused) Note(Cat("  ", Printable(r.path), ": ", Printable(r.why)));
  return kExitFailure;
}

int Sync(const Options& o, const Config& config) {
  if (o.words.size() > 2) throw Error(kExitUsage, Cat("unexpected argument '", o.words[2], "'"));
  std::string project = RequireProject(o.words.size() == 2 ? o.words[1] : o.project, "sync");
  RequireCopyMode(config, project);
  Connection c(o, config);
  SyncOptions so;
  so.force = o.force;
  so.dry_run = o.dry_run;
  SyncReport r = SyncWorkingCopy(c.sandbox(), c.Get(), config, project, so);
  std::vector<std::string> updated, deleted;
  for (const auto& ch : r.changes) {
    if (!ch.content()) continue;
    (ch.deleting() ? deleted : updated).push_back(ch.path);
  }
  if (o.json) {
    Json doc = JsonDocument("SyncReport");
    doc["project"] = project;
    doc["dry_run"] = o.dry_run;
    doc["created"] = r.created;
    doc["updated"] = updated;
    doc["deleted"] = deleted;
    doc["at_risk"] = r.at_risk;
    doc["saved_to"] = r.saved_to.empty() ? Json() : Json(r.saved_to);
    doc["snapshot"] = r.snapshot.empty() ? Json() : Json(r.snapshot);
    PrintJson(doc);
    return 0;
  }
  if (r.created) {
    std::cout << "Created the working copy ~/projects/" << project << " from the source.\n";
  }
  if (o.dry_run) {
    for (const auto& p : updated) std::cout << "would update  " << p << "\n";
    for (const auto& p : deleted) std::cout << "would delete  " << p << "\n";
    if (!r.at_risk.empty()) {
      std::cout << "\nChanged in the copy and would be replaced (sync refuses without --force):\n";
      for (const auto& p : r.at_risk) std::cout << "  " << p << "\n";
    }
    std::cout << "Dry run: " << Count(updated.size(), "file", "files") << " to update, "
              << deleted.size() << " to delete; nothing changed.\n";
    return 0;
  }
  if (!r.saved_to.empty()) {
    std::cout << "Saved " << Count(r.at_risk.size(), "file", "files")
              << " changed in the copy first: " << DisplayPath(r.saved_to) << "\n";
  }
  if (updated.empty() && deleted.empty()) {
    std::cout << "Synced '" << project << "': already up to date.\n";
  } else {
    std::cout << "Synced '" << project << "': " << Count(updated.size(), "file", "files")
              << " updated, " << deleted.size() << " deleted.\n";
  }
  return 0;
}

int Diff(const Options& o, const Config& config) {
  if (o.words.size() > 2) throw Error(kExitUsage, Cat("unexpected argument '", o.words[2], "'"));
  std::string project = RequireProject(o.words.size() == 2 ? o.words[1] : o.project, "diff");
  RequireCopyMode(config, project);
  Connection c(o, config);
  PrepareWorkingCopy(c.Get(), config, project);
  auto changes = CopyChanges(c.Get(), project);
  std::string diff = CopyDiff(c.Get(), project, changes);
  if (diff.empty()) return 0;
  std::cout << Printable(o.stat ? DiffStat(diff) : diff, true);
  return 0;
}

int Apply(const Options& o, const Config& config) {
  if (o.words.size() > 2) throw Error(kExitUsage, Cat("unexpected argument '", o.words[2], "'"));
  std::string project = RequireProject(o.words.size() == 2 ? o.words[1] : o.project, "apply");
  RequireCopyMode(config, project);
  Connection c(o, config);
  PrepareWorkingCopy(c.Get(), config, project);
  auto changes = CopyChanges(c.Get(), project);
  if (changes.empty()) {
    std::cout << "Nothing to apply: the working copy of '" << project << "' matches its source.\n";
    return 0;
  }
  std::string host_dir = ProjectStore().ProjectPath(project);
  std::cout << "Changes in the working copy of '" << project << "':\n";
  for (const auto& ch : changes) {
    char mark = ch.deleting() ? 'D' : ch.created() ? 'A' : 'M';
    std::cout << "  " << mark << " " << Printable(ch.path) << "\n";
  }
  std::cout.flush();
  if (!Confirm(Cat("Apply them to ", DisplayPath(host_dir), "? [y/N]: "), o.yes)) {
    std::cout << "Cancelled.\n";
    return 0;
  }
  CrossingReport r = ApplyChanges(c.Get(), project, changes, host_dir, SandboxLabel(c));
  std::cout << "Applied " << Count(changes.size() - r.refused.size(), "change", "changes") << " to "
            << DisplayPath(host_dir) << ".\n";
  return ReportRefused(r.refused, "left as they are on the host");
}

std::string RemoteBase(const Options& o, const Config& config, Connection& c) {
  std::string project = o.project.empty() ? ProjectOfCwd() : o.project;
  if (project.empty()) return "/home/sandbox";
  project = RequireProject(project, o.words[0]);
  if (IsCopyMode(config, project)) PrepareWorkingCopy(c.Get(), config, project);
  return CopyDir(project);
}

int Transfer(const Options& o, const Config& config) {
  bool push = o.words[0] == "push";
  if (o.words.size() != 3) {
    throw Error(kExitUsage, push ? "usage: ss push LOCAL REMOTE" : "usage: ss pull REMOTE LOCAL");
  }
  for (const auto& w : {o.words[1], o.words[2]}) {
    if (w.empty()) throw Error(kExitUsage, "empty path", {}, {"name a file or directory"});
  }
  Connection c(o, config);
  std::string base = RemoteBase(o, config, c);
  TransferResult r = push
                         ? Push(c.Get(), o.words[1], RemotePath(o.words[2], base))
                         : Pull(c.Get(), RemotePath(o.words[1], base), o.words[2], SandboxLabel(c));
  std::cout << (push ? "Pushed " : "Pulled ") << (r.directory ? "directory " : "")
            << (push ? o.words[1] : RemotePath(o.words[1], base)) << " to "
            << (push ? "sandbox:" : "") << r.destination << "\n";
  return ReportRefused(r.refused, "not written");
}

const std::vector<std::string>& Commands() {
  static const std::vector<std::string> c = {"sync", "diff", "apply", "push", "pull"};
  return c;
}

int Complete(const Args& words) {
  if (words.size() <= 1) {
    for (const auto& c : Commands()) std::cout << c << "\n";
    return 0;
  }
  const std::string& prev = words[words.size() - 2];
  if (prev == "--sandbox") {
    for (const auto& n : KnownSandboxes()) std::cout << n << "\n";
    return 0;
  }
  if (prev == "--project" ||
      (words.size() == 2 && (words[0] == "sync" || words[0] == "diff" || words[0] == "apply"))) {
    for (const auto& n : ProjectStore().Names()) std::cout << n << "\n";
  }
  for (const char* f : {"--sandbox", "--project", "--force", "--dry-run", "--stat", "--timeout",
                        "--json", "--yes", "--help"}) {
    std::cout << f << "\n";
  }
  return 0;
}

int Run(const Options& o) {
  if (o.help) {
    std::cout << kUsage;
    return 0;
  }
  if (o.words.empty()) {
    std::cerr << kUsage;
    return kExitUsage;
  }
  const std::string& cmd = o.words[0];
  if (std::find(Commands().begin(), Commands().end(), cmd) == Commands().end()) {
    std::vector<std::string> hints;
    if (auto guess = Suggest(cmd, Commands())) hints.push_back(Cat("did you mean '", *guess, "'?"));
    hints.push_back("see 'ss-sync --help'");
    throw Error(kExitUsage, Cat("unknown command '", cmd, "'"), {}, hints);
  }
  Config config = Config::Load();
  if (cmd == "sync") return Sync(o, config);
  if (cmd == "diff") return Diff(o, config);
  if (cmd == "apply") return Apply(o, config);
  return Transfer(o, config);
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss-sync", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete")
      return ss::Complete({args.begin() + 1, args.end()});
    return ss::Run(ss::ParseArgs(args));
  });
}
