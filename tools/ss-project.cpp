// ss-project: projects on the host (ss new, ss list, ss delete, ss project show). The store
// itself, and what keeps it whole under crashes and concurrent runs, is lib/project/project.hpp.
#include <algorithm>
#include <iostream>
#include <string>

#include "apply_base.hpp"
#include "config.hpp"
#include "config_edit.hpp"
#include "dispatch.hpp"
#include "error.hpp"
#include "folder_guard.hpp"
#include "folders.hpp"
#include "fs.hpp"
#include "github.hpp"
#include "guard_log.hpp"
#include "held_repository.hpp"
#include "json_out.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "project.hpp"
#include "project_line.hpp"
#include "rescue.hpp"
#include "sandbox_runner.hpp"
#include "share_guard.hpp"
#include "shell_quote.hpp"
#include "size.hpp"
#include "strings.hpp"
#include "timefmt.hpp"
#include "tool.hpp"
#include "working_copy.hpp"

namespace ss {
namespace {

using Command = ProjectLine::Command;

constexpr const char* kSandboxProjects = "/home/sandbox/projects";

void WarnMetadata(const Project& p) {
  if (p.rebuilt) {
    Warn(Cat("project '", p.name, "': ", p.problem, "; rebuilt it"));
  } else if (p.state != MetadataState::kOk) {
    Warn(Cat("project '", p.name, "': ", p.problem,
             "; it is rebuilt the next time the project is used"));
  }
}

Json ProjectJson(const Project& p, int64_t size, bool with_size) {
  Json item = Json::object();
  item["name"] = p.name;
  item["path"] = p.path;
  item["created"] = FormatRfc3339(p.metadata.created);
  item["last_accessed"] = FormatRfc3339(p.metadata.last_accessed);
  item["size_bytes"] = with_size && size >= 0 ? Json(size) : Json(nullptr);
  item["github_repo"] =
      p.metadata.github_repo.empty() ? Json(nullptr) : Json(p.metadata.github_repo);
  return item;
}

std::string SizeText(int64_t size) { return size < 0 ? "?" : FormatSizeHuman(size); }

// A project named like an ss command opens with `ss attach NAME`, not `ss NAME`.
void WarnIfCommandName(const std::string& name) {
  if (FindVerb(name) != nullptr || name == "help" || name == "commands") {
    Warn(Cat("'", name, "' is also an ss command: open this project with 'ss attach ", name, "'"));
  }
}

// gh runs where it is logged in: in the running sandbox first (the agent's gh), else on the
// host. The sandbox is never started for this.
GitHubRepo CreateWhereLoggedIn(const Project& p, bool is_private) {
  if (auto in_sandbox = SandboxRunner::IfRunning(p.name)) {
    try {
      GitHubRepo repo = CreateGitHubRepo(*in_sandbox, p.name, is_private);
      // gh gave the sandbox's repository its remote; the host's held one gets the same.
      if (HeldGitDirOf(p.path)) {
        ProcessResult url = in_sandbox->Run({"git", "remote", "get-url", "origin"});
        if (!url.ok() || !AddHeldRemote(p.name, "origin", std::string(Trim(url.out)))) {
          Warn(Cat("the host's repository of '", p.name,
                   "' has no remote 'origin' yet; add it: git -C ", ShellQuote(p.path),
                   " remote add origin ", repo.url, ".git"));
        }
      }
      return repo;
    } catch (const Error& e) {
      if (e.code() != kExitUnavailable) throw;  // gh there, logged in, and GitHub said no
      Debug(Cat("gh ", in_sandbox->Where(), ": ", e.what(), "; trying on the host"));
    }
  }
  // The .git file is put back first, if the sandbox changed it.
  HoldForUse(p.path, p.name);
  HostRunner on_host(p.path);
  return CreateGitHubRepo(on_host, p.name, is_private);
}

int New(const ProjectLine& o) {
  ProjectStore store;
  ValidateProjectName(o.name);
  if (IsIproute2Word(o.name)) {
    throw Error(kExitDataErr,
                Cat("'", o.name, "' cannot name a project: 'ss ", o.name,
                    " ...' belongs to iproute2's ss (its filters start with that word), so the "
                    "project could never be opened with 'ss ",
                    o.name, "'"),
                {}, {Cat("choose another name, such as ", o.name, "-app")});
  }
  if (o.github && !o.from.empty() && !PathExists(o.from + "/.git")) {
    throw Error(
        kExitDataErr,
        Cat("cannot create a GitHub repository from '", o.from, "': it is not a git repository"),
        {}, {"run 'git init' there and commit first, or leave out --github"});
  }
  Project p = store.Create(o.name, CreateOptions{o.from, o.copy});
  WarnIfCommandName(p.name);
  if (o.copy) SetConfigValue(ConfigPath(), Cat("projects.", p.name, ".mode"), "copy");
  std::cout << "Created: " << DisplayPath(p.path) << "\n";
  if (o.copy) {
    std::cout << "Mode: working copy (the agent works in a copy; ss sync, ss diff, ss apply)\n";
  }
  if (!o.from.empty()) std::cout << "Imported from: " << DisplayPath(o.from) << "\n";
  if (!p.not_imported.empty()) {
    Warn(Cat("not imported (neither a file, a folder nor a link): ", Join(p.not_imported, ", ")));
  }
  if (!o.github) {
    if (o.from.empty()) {
      std::cout << "\nFiles:\n"
                << "  AGENTS.md    - Agent instructions\n"
                << "  README.md    - Project readme\n";
    }
    return 0;
  }
  std::cout.flush();
  try {
    GitHubRepo repo = CreateWhereLoggedIn(p, o.is_private);
    store.SetGitHubRepo(p.name, repo.name_with_owner);
    std::cout << "GitHub: " << repo.url << "\n\nReady for Claude Code Web or local sandbox.\n";
  } catch (Error& e) {
    e.Hint(Cat("the project was created without a GitHub repository; to add one later: cd ",
               ShellQuote(p.path), " && ", ShellJoin(GhRepoCreateArgv(p.name, o.is_private))));
    throw;
  }
  return 0;
}

int List(const ProjectLine& o) {
  ProjectStore store;
  std::vector<std::string> skipped;
  std::vector<Project> projects = store.List(&skipped);
  for (const auto& line : skipped) Warn(line);
  std::vector<const Project*> by_name;
  for (const auto& p : projects) by_name.push_back(&p);
  std::sort(by_name.begin(), by_name.end(),
            [](const Project* a, const Project* b) { return a->name < b->name; });
  for (const Project* p : by_name) WarnMetadata(*p);
  std::vector<int64_t> sizes(projects.size(), -1);
  if (!o.no_size) sizes = store.Sizes(projects);

  if (o.json) {
    Json doc = JsonDocument("ProjectList");
    doc["items"] = Json::array();
    for (size_t i = 0; i < projects.size(); ++i) {
      doc["items"].push_back(ProjectJson(projects[i], sizes[i], !o.no_size));
    }
    PrintJson(doc);
    return 0;
  }
  SystemTime now = NowSeconds();
  std::vector<std::vector<std::string>> rows;
  for (size_t i = 0; i < projects.size(); ++i) {
    std::vector<std::string> row = {projects[i].name,
                                    FormatAgo(projects[i].metadata.last_accessed, now)};
    if (!o.no_size) row.push_back(SizeText(sizes[i]));
    rows.push_back(std::move(row));
  }
  if (!StdoutIsTty()) {
    for (const auto& row : rows) std::cout << Join(row, "\t") << "\n";
    return 0;
  }
  if (rows.empty()) {
    std::cout << "No projects yet in " << DisplayPath(store.base_dir())
              << "\n\nCreate a new project:\n  ss new my-app\n";
    return 0;
  }
  std::vector<std::string> header = {"NAME", "LAST ACCESSED"};
  if (!o.no_size) header.push_back("SIZE");
  std::vector<size_t> width(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    width[c] = header[c].size();
    for (const auto& row : rows) width[c] = std::max(width[c], row[c].size());
  }
  auto print = [&](const std::vector<std::string>& row) {
    std::string line;
    for (size_t c = 0; c < row.size(); ++c) {
      line += row[c];
      if (c + 1 < row.size()) line += std::string(width[c] + 4 - row[c].size(), ' ');
    }
    std::cout << line << "\n";
  };
  print(header);
  for (const auto& row : rows) print(row);
  return 0;
}

int Show(const ProjectLine& o) {
  ProjectStore store;
  Project p = store.Get(o.name);
  WarnMetadata(p);
  int64_t size = store.Sizes({p})[0];
  if (o.json) {
    Json doc = JsonDocument("Project");
    Json item = ProjectJson(p, size, true);
    doc.update(item);
    PrintJson(doc);
    return 0;
  }
  SystemTime now = NowSeconds();
  const ProjectMetadata& m = p.metadata;
  std::cout << "Name:           " << p.name << "\n"
            << "Path:           " << DisplayPath(p.path) << "\n"
            << "In sandbox:     "
            << (IsCopyMode(Config::Load(), p.name) ? CopyDir(p.name)
                                                   : Cat(kSandboxProjects, "/", p.name))
            << "\n"
            << "Created:        " << FormatRfc3339(m.created) << " (" << FormatAgo(m.created, now)
            << ")\n"
            << "Last accessed:  " << FormatRfc3339(m.last_accessed) << " ("
            << FormatAgo(m.last_accessed, now) << ")\n"
            << "Size:           " << SizeText(size) << "\n"
            << "Repository:     "
            << (HeldGitDirOf(p.path)
                    ? Cat(DisplayPath(*HeldGitDirOf(p.path)), " (out of the sandbox's reach)")
                : IsCheckout(p.path) ? Cat(DisplayPath(p.path), "/.git")
                                     : std::string("none"))
            << "\n"
            << "GitHub:         "
            << (m.github_repo.empty() ? "none" : Cat("https://github.com/", m.github_repo)) << "\n";
  return 0;
}

// Asks on the terminal; true only for y or yes.
bool Confirm(const std::string& question) {
  std::cerr << question << std::flush;
  std::string answer;
  if (!std::getline(std::cin, answer)) {
    std::cerr << "\n";
    return false;
  }
  std::string a = ToLower(Trim(answer));
  return a == "y" || a == "yes";
}

int Delete(const ProjectLine& o) {
  ProjectStore store;
  std::optional<Project> found = store.Find(o.name);
  if (!found) throw store.NotFoundError(o.name);
  Config config = Config::Load();
  // Its working copies go too; unapplied work in them is refused, or saved first with --force.
  std::vector<WorkingCopyFound> copies;
  if (IsCopyMode(config, o.name)) copies = FindWorkingCopies(config, o.name, o.force);
  std::string question = Cat("Delete '", o.name, "'? This cannot be undone.");
  SettleStagedRepositories(o.name);  // (its maker killed before the repository was in place)
  if (IsDirectory(HeldRepositoryDir(o.name))) {
    question += Cat(" Its repository, ", DisplayPath(HeldRepositoryDir(o.name)), ", goes too.");
  }
  for (const auto& c : copies) {
    question +=
        c.unapplied > 0
            ? Cat(" Its working copy in sandbox '", c.sandbox, "' goes too; its ", c.unapplied,
                  c.unapplied == 1 ? " change" : " changes", " not yet applied are saved to ",
                  DisplayPath(SsHome()), "/rescued/ first.")
            : Cat(" Its working copy in sandbox '", c.sandbox, "' goes too.");
  }
  if (!o.yes) {
    if (!StdinIsTty()) {
      throw Error(kExitUsage,
                  Cat("refusing to delete project '", o.name,
                      "' without confirmation: standard input is not a terminal"),
                  {}, {Cat("to delete it without asking, run: ss delete ", o.name, " --yes")});
    }
    if (!Confirm(question + " [y/N]: ")) {
      Note(Cat("Not deleted: ", o.name));
      return kExitFailure;
    }
  }
  for (auto& c : copies) {
    if (auto saved = RemoveWorkingCopy(c, o.name)) {
      std::cout << "Saved the working copy's changes first: " << DisplayPath(*saved) << "\n";
    }
  }
  Project p = store.Delete(o.name);
  UnsetConfigSection(config.path(), Cat("projects.", o.name));
  std::vector<std::string> folder_sandboxes;
  for (const auto& f : RecordedFolders()) folder_sandboxes.push_back(f.sandbox);
  BaseRecord::ForgetProject(o.name, folder_sandboxes);
  std::cout << "Deleted: " << p.name << "\n";
  if (!p.metadata.github_repo.empty()) {
    std::cout << "The GitHub repository " << p.metadata.github_repo << " was not deleted.\n";
  }
  return 0;
}

// `ss-project --complete WORD...`: candidates for the last WORD. The first word is the
// subcommand (the dispatcher puts "new", "list" or "delete" there for the short forms).
int Complete(const Args& words) {
  const std::string& previous = words.size() >= 2 ? words[words.size() - 2] : "";
  if (previous == "--from") return 0;  // a path: the shell's to complete
  if (words.size() == 2 && (words[0] == "show" || words[0] == "delete" || words[0] == "path")) {
    for (const auto& name : ProjectStore().Names()) std::cout << name << "\n";
  }
  std::string out;
  ProjectCommands().Complete(words, out);
  std::cout << out;
  return 0;
}

// The folder of a project (or of all projects), for `ss cd` and scripts.
int Path(const ProjectLine& o) {
  ProjectStore store;
  if (o.name.empty()) {
    std::cout << store.base_dir() << "\n";
    return 0;
  }
  ValidateProjectName(o.name);
  std::optional<Project> found = store.Find(o.name);
  if (!found) throw store.NotFoundError(o.name);
  std::cout << found->path << "\n";
  return 0;
}

// The guard of a running sandbox's shared folders (folder_guard.hpp), started by ss with the
// sandbox as its ss-net is (share_guard.hpp): a first line once every folder is watched, then a
// line for each thing it set aside, until it is stopped or the folders are gone.
int Guard(const ProjectLine& o) {
  std::vector<GuardedFolder> folders;
  if (!o.projects_dir.empty()) folders.push_back({o.projects_dir, true});
  for (const auto& folder : o.folders) folders.push_back({folder, false});
  // Its lines as a bucket of a megabyte refilled at 256 bytes a second allows, then their count
  // (guard_log.hpp): a day of a sandbox planting without end adds 23 MB. A session's end shows
  // the first few and every one saying what it could not do. (Names the sandbox chose are shown
  // without their line breaks: a line of the log is the guard's.)
  // Started again while the sandbox ran: what its first run knew.
  std::optional<std::set<std::string>> known = ShareGuardKnown(o.sandbox);
  bool again = known.has_value();
  GuardLog log(std::cout, 1 << 20, 256);
  FolderGuard guard(
      folders, [&log](const std::string& line) { log.Say(Printable(line)); }, std::move(known));
  if (!again) {
    try {
      ShareGuardRecordKnown(o.sandbox, guard.Known());
    } catch (const Error& e) {
      log.Say(Printable(Cat("cannot record the repositories found (", e.what(),
                            "): a guard started again would take what it finds for yours")));
    }
  }
  log.Say(Cat("watching ", guard.watched(), " folders of sandbox ", o.sandbox));
  // Woken every 10 s at most, to say how many lines it held back once it may.
  while (guard.Step(10000)) log.Tick();
  return 0;
}

int RunCommand(const ProjectLine& o) {
  switch (o.command) {
    case Command::kHelp:
      std::cout << ProjectCommands().Help();
      return 0;
    case Command::kNew:
      return New(o);
    case Command::kList:
      return List(o);
    case Command::kShow:
      return Show(o);
    case Command::kDelete:
      return Delete(o);
    case Command::kPath:
      return Path(o);
    case Command::kGuard:
      return Guard(o);
  }
  return kExitSoftware;
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss-project", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete")
      return ss::Complete({args.begin() + 1, args.end()});
    return ss::RunCommand(ss::ParseProjectLine(args));
  });
}
