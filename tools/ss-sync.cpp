// ss-sync: working copies and files. `ss sync`, `ss diff`, `ss apply`, `ss push` and `ss pull`
// come here.
#include <unistd.h>

#include <iostream>

#include "config.hpp"
#include "error.hpp"
#include "folders.hpp"
#include "git_layer.hpp"
#include "held_repository.hpp"
#include "host_exec.hpp"
#include "json_out.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "project.hpp"
#include "prompt.hpp"
#include "sandbox.hpp"
#include "shell_quote.hpp"
#include "strings.hpp"
#include "sync.hpp"
#include "sync_line.hpp"
#include "tool.hpp"
#include "transfer.hpp"
#include "working_copy.hpp"

namespace ss {
namespace {

// The project of the current directory, if it is inside the projects folder or the copy-mode
// projects' one.
std::string ProjectOfCwd() {
  char buf[4096];
  if (!::getcwd(buf, sizeof buf)) return "";
  std::string cwd = buf;
  for (std::string base : {ProjectsDir(), CopyProjectsDir()}) {
    char real[4096];
    if (::realpath(base.c_str(), real)) base = real;
    if (cwd.rfind(base + "/", 0) != 0) continue;
    std::string rest = cwd.substr(base.size() + 1);
    std::string name = rest.substr(0, rest.find('/'));
    return IsValidProjectName(name) ? name : "";
  }
  return "";
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

// What sync, diff and apply work on: a copy-mode project, or a copy-mode folder (`ss run DIR
// --copy`, named by a path, or the one the current directory is in), and the sandbox its copy
// lives in.
struct Target {
  CopySource source;
  std::string sandbox;
};

Target RequireCopy(const SyncLine& o, const Config& config, const std::string& verb) {
  std::string word = !o.args.empty() ? o.args[0] : o.project;
  std::optional<Folder> folder;
  if (!word.empty() && IsFolderWord(word)) {
    folder = FolderAt(word);
    if (!folder) {
      throw Error(
          kExitNoInput, Cat("'", word, "' is not in a folder opened with ss run"), {},
          {Cat("open it in working-copy mode first: ss run ", ShellQuote(word), " --copy")});
    }
  } else if (word.empty() && ProjectOfCwd().empty()) {
    folder = FolderAt(".");
  }
  Target t;
  if (folder) {
    if (!folder->copy) {
      throw Error(kExitUsage, Cat("the folder ", folder->path, " is not in working-copy mode"),
                  {"the agent works in the folder itself: there is no copy to sync"},
                  {Cat("the mode is chosen when its sandbox is made: ss vm delete --sandbox ",
                       folder->sandbox, ", then ss run ", ShellQuote(folder->path), " --copy")});
    }
    t.source = FolderCopy(*folder);
    t.sandbox = o.sandbox.empty() ? folder->sandbox : ResolveSandboxName(o.sandbox);
  } else {
    std::string project = RequireProject(word, verb);
    if (!IsCopyMode(config, project)) {
      throw Error(kExitUsage, Cat("project '", project, "' is not in working-copy mode"),
                  {"the agent works in the shared folder itself: there is no copy to sync"},
                  {Cat("switch it: ss config set projects.", project, ".mode copy")});
    }
    t.source = ProjectCopy(config, project);
    t.sandbox = ResolveSandboxName(o.sandbox);
  }
  RequireCopyIn(config, t.source, t.sandbox);
  return t;
}

// Reading from a sandbox (diff, apply, fetch, pull) needs one that exists: making a sandbox
// only to find no copy in it would take minutes and leave a machine behind.
enum class IfMissing { kCreate, kRefuse };

class Connection {
 public:
  Connection(const SyncLine& o, const Config& config, const std::string& sandbox,
             IfMissing if_missing)
      : o_(o),
        sandbox_(Checked(sandbox.empty() ? ResolveSandboxName(o.sandbox) : sandbox, if_missing),
                 config) {}
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
  // Asked before a backend is chosen, as that may find none can run.
  static std::string Checked(std::string name, IfMissing if_missing) {
    if (if_missing == IfMissing::kRefuse && !SandboxExists(name)) {
      throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"),
                  {"there is nothing in it to read yet"},
                  {"a session makes it: ss PROJECT (or ss DIR --copy for a folder)"});
    }
    return name;
  }

  const SyncLine& o_;
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

// What a fetch did: a FetchReport document, or a line per branch. `name` is the project's or
// the folder's layout name, `folder` the folder's path (empty for a project), `what` the place
// the commits came from ("the working copy of x").
int ReportFetch(const SyncLine& o, const FetchReport& r, const std::string& name,
                const std::string& folder, const std::string& what) {
  if (o.json) {
    Json doc = JsonDocument("FetchReport");
    doc["project"] = name;
    doc["folder"] = folder.empty() ? Json() : Json(folder);
    doc["repository"] = r.repository;
    doc["branches"] = Json::array();
    for (const auto& b : r.branches) {
      const char* outcome = b.outcome == FetchedBranch::Outcome::kFastForwarded ? "fast-forwarded"
                            : b.outcome == FetchedBranch::Outcome::kNew         ? "new"
                            : b.outcome == FetchedBranch::Outcome::kSaved       ? "saved"
                                                                                : "kept";
      doc["branches"].push_back({{"name", b.name},
                                 {"outcome", outcome},
                                 {"commits", b.commits},
                                 {"from", b.from.empty() ? Json() : Json(b.from)},
                                 {"to", b.to},
                                 {"ref", Cat("refs/remotes/sandbox/", b.name)},
                                 {"why", b.why.empty() ? Json() : Json(b.why)}});
    }
    PrintJson(doc);
    return 0;
  }
  if (!r.repository) {
    std::cout << "Nothing to fetch: " << what << " has no repository of its own.\n";
    return 0;
  }
  std::vector<std::string> lines = FetchLines(r);
  if (lines.empty()) {
    std::cout << "Nothing to fetch: the host has every commit of " << what << ".\n";
  }
  for (const auto& line : lines) std::cout << line << "\n";
  return 0;
}

// ss fetch of a shared project: the commits of the sandbox's own repository of it, whose
// .git file is put back first if the sandbox changed it (held_repository.hpp).
int FetchShared(const SyncLine& o, const Config& config, const std::string& project) {
  std::string dir = PlaceProject(config, project);
  Holding h = HoldForUse(dir, project);
  if (h.state == Holding::State::kNone) {
    throw Error(
        kExitNoInput,
        Cat("project '", project, "' is not a git repository: there are no commits to fetch"), {},
        {Cat("make it one first: git -C ", ShellQuote(dir), " init")});
  }
  if (h.state == Holding::State::kLeft) {
    if (o.json) return ReportFetch(o, FetchReport{}, project, "", "");
    std::cout << "Nothing to fetch: project '" << project
              << "' keeps its repository in its folder, where the sandbox commits itself.\n";
    return 0;
  }
  Connection c(o, config, ResolveSandboxName(o.sandbox), IfMissing::kRefuse);
  LayerPlace place = SharedLayer(project, dir);
  FetchReport r = FetchGitLayer(c.Get(), config, place, c.sandbox().name());
  return ReportFetch(o, r, project, "", place.what);
}

int Fetch(const SyncLine& o, const Config& config) {
  std::string word = !o.args.empty() ? o.args[0] : o.project;
  if (!IsFolderWord(word) && !(word.empty() && ProjectOfCwd().empty())) {
    std::string project = RequireProject(word, "fetch");
    if (!IsCopyMode(config, project)) return FetchShared(o, config, project);
  }
  Target t = RequireCopy(o, config, "fetch");
  Connection c(o, config, t.sandbox, IfMissing::kRefuse);
  PrepareWorkingCopy(c.Get(), config, t.source, c.sandbox().name());
  LayerPlace place = CopyLayer(t.source);
  FetchReport r = FetchGitLayer(c.Get(), config, place, c.sandbox().name());
  return ReportFetch(o, r, t.source.name, t.source.folder() ? t.source.host_dir : "", place.what);
}

int Sync(const SyncLine& o, const Config& config) {
  Target t = RequireCopy(o, config, "sync");
  const std::string& project = t.source.name;
  const std::string& label = t.source.folder() ? t.source.host_dir : project;
  Connection c(o, config, t.sandbox, IfMissing::kCreate);
  SyncOptions so;
  so.force = o.force;
  so.dry_run = o.dry_run;
  SyncReport r = SyncWorkingCopy(c.sandbox(), c.Get(), config, t.source, so);
  std::vector<std::string> updated, deleted;
  for (const auto& ch : r.changes) {
    if (!ch.content()) continue;
    (ch.deleting() ? deleted : updated).push_back(ch.path);
  }
  if (o.json) {
    Json doc = JsonDocument("SyncReport");
    doc["project"] = project;
    doc["folder"] = t.source.folder() ? Json(t.source.host_dir) : Json();
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
    std::cout << "Created the working copy "
              << (t.source.folder() ? t.source.workspace : Cat("~/projects/", project))
              << " from the source.\n";
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
    std::cout << "Synced '" << label << "': already up to date.\n";
  } else {
    std::cout << "Synced '" << label << "': " << Count(updated.size(), "file", "files")
              << " updated, " << deleted.size() << " deleted.\n";
  }
  return 0;
}

// The plan of `source`: its copy in place, every difference decided against the base.
ApplyPlan Plan(Connection& c, const Config& config, const CopySource& source) {
  PrepareWorkingCopy(c.Get(), config, source, c.sandbox().name());
  return PlanApply(c.Get(), config, c.sandbox().name(), source, SandboxLabel(c));
}

// What stays on the host because only the user changed it, and why the base may be unknown.
void NoteKept(const ApplyPlan& plan, const std::string& project) {
  size_t kept = plan.Count(Action::kKeepHost);
  if (kept > 0) {
    Note(Cat("Changed only on the host since the last sync (kept; ss sync ", project,
             " brings them to the copy): ", Count(kept, "file", "files"), "."));
  }
  if (!plan.base.recorded() && plan.Count(Action::kConflict) > 0) {
    Note(
        Cat("There is no record of what the copy was made from (a sandbox restored, or a copy "
            "from an older ss): every difference is a conflict until ss sync ",
            project, " records one."));
  }
}

// The changes apply would bring (or leave as conflicts) to files the host runs or obeys on its
// own: each path with what obeys it. Decided on the host, from the plan's paths.
std::vector<std::pair<std::string, std::string>> HostExecChanges(const ApplyPlan& plan,
                                                                 const Config& config) {
  HostExecRules rules = HostExecRules::From(config, plan.host_dir);
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& p : plan.changes) {
    if (p.action != Action::kTake && p.action != Action::kConflict) continue;
    if (auto why = rules.Why(p.path)) out.emplace_back(p.path, *why);
  }
  return out;
}

int Diff(const SyncLine& o, const Config& config) {
  Target t = RequireCopy(o, config, "diff");
  Connection c(o, config, t.sandbox, IfMissing::kRefuse);
  ApplyPlan plan = Plan(c, config, t.source);
  std::string diff = PlanDiff(plan);
  // The marks come from the host, before the text the sandbox made.
  for (const auto& [path, what] : HostExecChanges(plan, config)) {
    std::cout << "# runs on the host: " << Printable(path) << " (" << what << ")\n";
  }
  if (!diff.empty()) std::cout << Printable(o.stat ? DiffStat(diff) : diff, true) << std::flush;
  NoteKept(plan, t.source.word);
  return 0;
}

Resolution ChosenResolution(const SyncLine& o) {
  int n = o.ours + o.theirs + o.merge;
  if (n > 1) throw Error(kExitUsage, "choose one of --ours, --theirs and --merge");
  return o.ours     ? Resolution::kOurs
         : o.theirs ? Resolution::kTheirs
         : o.merge  ? Resolution::kMerge
                    : Resolution::kNone;
}

int Apply(const SyncLine& o, const Config& config) {
  Target t = RequireCopy(o, config, "apply");
  // Messages name a project as 'app' and a folder by its path.
  const std::string project = t.source.folder() ? t.source.host_dir : t.source.name;
  const std::string& word = t.source.word;
  Resolution resolution = ChosenResolution(o);
  Connection c(o, config, t.sandbox, IfMissing::kRefuse);
  const std::string& host_dir = t.source.host_dir;
  ApplyPlan plan = Plan(c, config, t.source);
  size_t takes = plan.Count(Action::kTake), conflicts = plan.Count(Action::kConflict);
  if (plan.changes.empty() && plan.refused.empty()) {
    std::cout << "Nothing to apply: the working copy of '" << project << "' matches its source.\n";
    return 0;
  }
  if (takes == 0 && conflicts == 0 && plan.refused.empty()) {
    std::cout << "Nothing to apply: the working copy of '" << project
              << "' has no changes of its own since the last sync.\n";
    NoteKept(plan, word);
    return 0;
  }
  std::cout << "Changes in the working copy of '" << project << "':\n";
  for (const auto& p : plan.changes) {
    if (p.action != Action::kTake && p.action != Action::kConflict) continue;
    std::cout << "  " << p.Mark() << " " << Printable(p.path)
              << (p.action == Action::kConflict ? "  (changed on the host too)" : "") << "\n";
  }
  std::cout.flush();
  NoteKept(plan, word);
  if (auto exec = HostExecChanges(plan, config); !exec.empty() && !o.allow_exec) {
    std::vector<std::string> lines;
    for (const auto& [path, what] : exec)
      lines.push_back(Cat("  ", Printable(path), " (", what, ")"));
    throw Error(kExitFailure,
                Cat("the changes include ", Count(exec.size(), "file", "files"),
                    " the host runs or obeys on its own; nothing was applied"),
                lines,
                {Cat("read them: ss diff ", word),
                 Cat("apply them too: ss apply ", word, " --allow-exec")});
  }
  if (takes == 0 && plan.refused.empty() && resolution == Resolution::kNone) {
    // Nothing to ask: only conflicts, and no way chosen to settle them.
  } else if (!Confirm(Cat("Apply them to ", DisplayPath(host_dir), "? [y/N]: "), o.yes)) {
    std::cout << "Cancelled.\n";
    return 0;
  }
  ApplyReport r = ApplyPlanned(c.Get(), c.sandbox().name(), t.source.name, plan, host_dir,
                               resolution, SandboxLabel(c));
  if (!r.crossing.written.empty() || takes > 0) {
    std::cout << "Applied " << Count(r.crossing.written.size(), "change", "changes") << " to "
              << DisplayPath(host_dir) << ".\n";
  }
  if (resolution == Resolution::kOurs && conflicts > 0) {
    std::cout << "Kept the host's version of " << Count(conflicts, "file", "files") << " (ss sync "
              << word << " brings it to the copy).\n";
  }
  if (resolution == Resolution::kTheirs && conflicts > 0) {
    std::cout << "Took the sandbox's version of "
              << Count(conflicts, "conflicting file", "conflicting files") << ".\n";
  }
  for (const auto& m : r.merged) std::cout << "Merged " << Printable(m) << ".\n";
  int status = ReportRefused(r.crossing.refused, "left as they are on the host");
  if (!r.marked.empty()) {
    Warn(Cat("merged with conflict markers (<<<<<<< host, >>>>>>> sandbox), to settle in the ",
             r.marked.size() == 1 ? "file:" : "files:"));
    for (const auto& m : r.marked) Note(Cat("  ", Printable(m)));
    status = kExitFailure;
  }
  if (!r.conflicts.empty()) {
    Warn(Cat("left ", Count(r.conflicts.size(), "conflict", "conflicts"),
             " as on the host (changed there and in the sandbox since the last sync):"));
    for (const auto& f : r.conflicts) Note(Cat("  ", Printable(f)));
    Note(Cat("hint: see them: ss diff ", word));
    Note(Cat("hint: keep the host's versions: ss apply ", word, " --ours"));
    Note(Cat("hint: take the sandbox's: ss apply ", word, " --theirs"));
    Note(Cat("hint: merge text, with conflict markers where both changed a line: ss apply ", word,
             " --merge"));
    status = kExitFailure;
  }
  if (!r.base_advanced) {
    Warn(Cat("could not record this in the sandbox (is its disk full?); the next ss sync ", word,
             " may list these files as changed in the copy"));
  }
  return status;
}

std::string RemoteBase(const SyncLine& o, const Config& config, Connection& c) {
  std::string project = o.project.empty() ? ProjectOfCwd() : o.project;
  if (project.empty()) return "/home/sandbox";
  project = RequireProject(project, o.command);
  if (IsCopyMode(config, project)) {
    CopySource source = ProjectCopy(config, project);
    RequireCopyIn(config, source, c.sandbox().name());
    PrepareWorkingCopy(c.Get(), config, source, c.sandbox().name());
    return CopyDir(project);
  }
  return Cat(kProjectsTarget, "/", project);
}

int Transfer(const SyncLine& o, const Config& config) {
  bool push = o.command == "push";
  for (const auto& w : o.args) {
    if (w.empty()) throw Error(kExitUsage, "empty path", {}, {"name a file or directory"});
  }
  Connection c(o, config, "", push ? IfMissing::kCreate : IfMissing::kRefuse);
  std::string base = RemoteBase(o, config, c);
  TransferResult r = push ? Push(c.Get(), o.args[0], RemotePath(o.args[1], base))
                          : Pull(c.Get(), RemotePath(o.args[0], base), o.args[1],
                                 {config.Int("sync.max_size"), SandboxLabel(c)});
  std::cout << (push ? "Pushed " : "Pulled ") << (r.directory ? "directory " : "")
            << (push ? o.args[0] : RemotePath(o.args[0], base)) << " to "
            << (push ? "sandbox:" : "") << r.destination << "\n";
  return ReportRefused(r.refused, "not written");
}

int Complete(const Args& words) {
  const std::string& prev = words.size() >= 2 ? words[words.size() - 2] : "";
  if (prev == "--sandbox") {
    for (const auto& n : KnownSandboxes()) std::cout << n << "\n";
    return 0;
  }
  if (prev == "--project" || (words.size() == 2 && (words[0] == "sync" || words[0] == "diff" ||
                                                    words[0] == "apply" || words[0] == "fetch"))) {
    for (const auto& n : ProjectStore().Names()) std::cout << n << "\n";
  }
  std::string out;
  SyncCommands().Complete(words, out);
  std::cout << out;
  return 0;
}

int Run(const SyncLine& o) {
  if (o.help || o.command.empty()) return SyncCommands().ShowHelp(o.help);
  Config config = Config::Load();
  if (o.command == "sync") return Sync(o, config);
  if (o.command == "diff") return Diff(o, config);
  if (o.command == "apply") return Apply(o, config);
  if (o.command == "fetch") return Fetch(o, config);
  return Transfer(o, config);
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss-sync", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete")
      return ss::Complete({args.begin() + 1, args.end()});
    // Not for people: git's ext:: transport in `ss fetch` (git_layer.hpp).
    if (!args.empty() && args[0] == "--git-transport")
      return ss::RunGitTransport({args.begin() + 1, args.end()});
    return ss::Run(ss::ParseSyncLine(args));
  });
}
