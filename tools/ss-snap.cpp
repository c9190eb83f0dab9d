// ss-snap: snapshots of a sandbox. `ss snapshot [NAME]`, `ss snapshots`, `ss restore NAME` and
// `ss snapshot delete NAME` come here.
#include <algorithm>
#include <iomanip>
#include <iostream>

#include "config.hpp"
#include "error.hpp"
#include "json_out.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "prompt.hpp"
#include "rescue.hpp"
#include "sandbox.hpp"
#include "snap_line.hpp"
#include "snapshot.hpp"
#include "strings.hpp"
#include "timefmt.hpp"
#include "tool.hpp"

namespace ss {
namespace {

Json SnapshotJson(const Snapshot& s) {
  return {
      {"name", s.name},
      {"created", FormatRfc3339(std::chrono::time_point_cast<std::chrono::seconds>(s.created))}};
}

std::string NotAffected() {
  return Cat("Projects in ", DisplayPath(ProjectsDir()), "/ are not affected.");
}

// The commands below get a command line Run has checked (argument counts, snapshot names).
int Take(const SnapLine& o, Sandbox& sandbox) {
  std::string name = !o.name.empty() ? o.name
                                     : DefaultSnapshotName(std::chrono::system_clock::now(),
                                                           ListSnapshots(sandbox));
  Snapshot s = TakeSnapshot(sandbox, name);
  if (o.json) {
    Json doc = JsonDocument("Snapshot");
    doc["sandbox"] = sandbox.name();
    doc.update(SnapshotJson(s));
    PrintJson(doc);
  } else {
    std::cout << "Snapshot taken: " << s.name << "\n";
  }
  return 0;
}

int DeleteOne(const SnapLine& o, Sandbox& sandbox) {
  const std::string& name = o.name;
  if (!Confirm(Cat("Delete snapshot '", name, "' of sandbox '", sandbox.name(), "'? [y/N]: "),
               o.yes)) {
    std::cout << "Cancelled.\n";
    return 0;
  }
  DeleteSnapshot(sandbox, name);
  std::cout << "Deleted snapshot: " << name << "\n";
  return 0;
}

int List(const SnapLine& o, Sandbox& sandbox) {
  std::vector<Snapshot> snapshots = ListSnapshots(sandbox);
  if (o.json) {
    Json doc = JsonDocument("SnapshotList");
    doc["sandbox"] = sandbox.name();
    doc["items"] = Json::array();
    for (const auto& s : snapshots) doc["items"].push_back(SnapshotJson(s));
    PrintJson(doc);
    return 0;
  }
  bool tty = StdoutIsTty();
  if (tty && snapshots.empty()) {
    std::cout << "No snapshots. Take one: ss snapshot [NAME]\n";
    return 0;
  }
  if (tty)
    std::cout << std::left << std::setw(32) << "NAME"
              << "CREATED\n";
  auto now = std::chrono::system_clock::now();
  for (const auto& s : snapshots) {
    auto created = std::chrono::time_point_cast<std::chrono::seconds>(s.created);
    if (tty) {
      std::cout << std::setw(32) << s.name << FormatRfc3339(created) << " ("
                << FormatAgo(created, now) << ")\n";
    } else {
      std::cout << s.name << "\t" << FormatRfc3339(created) << "\n";
    }
  }
  return 0;
}

int Restore(const SnapLine& o, Sandbox& sandbox) {
  const std::string& name = o.name;
  UnappliedGuard guard([&]() -> Sandbox& { return sandbox; }, Config::Load(), o.force, "restore");
  std::string question = Cat("Restore sandbox '", sandbox.name(), "' to snapshot '", name,
                             "'?\nEverything changed in the sandbox since then is lost; it "
                             "restarts.\n",
                             guard.ProjectsLine(sandbox.name()), "\n\nContinue? [y/N]: ");
  if (!Confirm(question, o.yes)) {
    std::cout << "Cancelled.\n";
    return 0;
  }
  for (const auto& line : guard.Save()) std::cout << line << "\n";
  Progress progress(Cat("sandbox ", sandbox.name()));
  RestoreSnapshot(sandbox, name, progress, std::chrono::seconds(o.timeout));
  std::cout << "Restored '" << sandbox.name() << "' to snapshot '" << name
            << "'; it is running and answers over SSH.\n"
            << NotAffected() << "\n";
  return 0;
}

int Complete(const Args& words) {
  std::string out;
  const std::string& prev = words.size() >= 2 ? words[words.size() - 2] : "";
  if (prev == "--sandbox") {
    for (const auto& n : KnownSandboxes()) std::cout << n << "\n";
    return 0;
  }
  std::vector<std::string> typed(words.begin(), words.end() - (words.empty() ? 0 : 1));
  size_t used = 0;
  const CommandSpec* command = SnapCommands().Match(typed, &used);
  if (command && command->max_args > 0 && typed.size() == used && command->name != "snapshot") {
    try {
      Sandbox sandbox(ResolveSandboxName(""), Config::Load());
      for (const auto& s : ListSnapshots(sandbox)) std::cout << s.name << "\n";
    } catch (const Error&) {
    }
  }
  SnapCommands().Complete(words, out);
  std::cout << out;
  return 0;
}

int Run(const SnapLine& o) {
  if (o.help || o.command.empty()) return SnapCommands().ShowHelp(o.help);
  // The command line is checked before anything is asked of the backend.
  if (!o.name.empty()) ValidateSnapshotName(o.name);
  std::string name = ResolveSandboxName(o.sandbox);
  auto sandboxes = KnownSandboxes();
  if (std::find(sandboxes.begin(), sandboxes.end(), name) == sandboxes.end()) {
    throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"), {},
                {"create it: ss start"});
  }
  Sandbox sandbox(name, Config::Load());
  if (o.command == "snapshot delete") return DeleteOne(o, sandbox);
  if (o.command == "snapshot") return Take(o, sandbox);
  if (o.command == "restore") return Restore(o, sandbox);
  return List(o, sandbox);
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss-snap", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete")
      return ss::Complete({args.begin() + 1, args.end()});
    return ss::Run(ss::ParseSnapLine(args));
  });
}
