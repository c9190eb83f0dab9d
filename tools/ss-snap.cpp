// ss-snap: snapshots of a sandbox. `ss snapshot [NAME]`, `ss snapshots`, `ss restore NAME` and
// `ss snapshot delete NAME` come here.
#include <algorithm>
#include <boost/program_options.hpp>
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
#include "snapshot.hpp"
#include "strings.hpp"
#include "timefmt.hpp"
#include "tool.hpp"

namespace po = boost::program_options;

namespace ss {
namespace {

constexpr const char* kUsage = R"(usage: ss-snap COMMAND [OPTIONS]

Snapshots of the sandbox's own disk. Projects shared from the host are never in a snapshot,
and restoring one never touches them.

Commands:
  snapshot [NAME]       take a snapshot (default name: snap-YYYYMMDD-HHMMSS, UTC)
  snapshot delete NAME  delete a snapshot (--yes)
  list                  list snapshots, oldest first (--json); `ss snapshots`
  restore NAME          restore a snapshot, restart the sandbox and wait until it answers (--yes)

Options:
  --sandbox NAME        the sandbox (default: $SS_SANDBOX, $CLAUDE_SANDBOX, super-sandbox)
  --timeout SECONDS     how long restore waits for SSH (default 60)
  --json                print one JSON document (see ss-json(7))
  --force               restore although working copies have changes not yet applied
                        (saved to ~/super-sandbox/rescued/ first)
  -y, --yes             do not ask for confirmation
  -h, --help            show this help
)";

struct Options {
  std::vector<std::string> words;
  std::string sandbox;
  int timeout = 60;
  bool force = false;
  bool json = false;
  bool yes = false;
  bool help = false;
};

Options ParseArgs(const Args& args) {
  Options o;
  po::options_description desc;
  desc.add_options()("sandbox", po::value(&o.sandbox))("timeout", po::value(&o.timeout))(
      "json", po::bool_switch(&o.json))("yes,y", po::bool_switch(&o.yes))(
      "force", po::bool_switch(&o.force))("help,h", po::bool_switch(&o.help))("words",
                                                                              po::value(&o.words));
  ParseWithWords(args, desc);
  if (o.timeout <= 0) {
    throw Error(kExitUsage, Cat("--timeout must be a positive number of seconds, not ", o.timeout));
  }
  return o;
}

Json SnapshotJson(const Snapshot& s) {
  return {
      {"name", s.name},
      {"created", FormatRfc3339(std::chrono::time_point_cast<std::chrono::seconds>(s.created))}};
}

std::string NotAffected() {
  return Cat("Projects in ", DisplayPath(ProjectsDir()), "/ are not affected.");
}

// The commands below get a command line Run has checked (argument counts, snapshot names).
int Take(const Options& o, Sandbox& sandbox) {
  std::string name = o.words.size() == 2 ? o.words[1]
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

int DeleteOne(const Options& o, Sandbox& sandbox) {
  const std::string& name = o.words[2];
  if (!Confirm(Cat("Delete snapshot '", name, "' of sandbox '", sandbox.name(), "'? [y/N]: "),
               o.yes)) {
    std::cout << "Cancelled.\n";
    return 0;
  }
  DeleteSnapshot(sandbox, name);
  std::cout << "Deleted snapshot: " << name << "\n";
  return 0;
}

int List(const Options& o, Sandbox& sandbox) {
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

int Restore(const Options& o, Sandbox& sandbox) {
  const std::string& name = o.words[1];
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

const std::vector<std::string>& Commands() {
  static const std::vector<std::string> c = {"snapshot", "list", "ls", "restore"};
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
  bool wants_name = (words[0] == "restore" && words.size() == 2) ||
                    (words[0] == "snapshot" && words.size() == 3 && words[1] == "delete");
  if (wants_name) {
    try {
      Sandbox sandbox(ResolveSandboxName(""), Config::Load());
      for (const auto& s : ListSnapshots(sandbox)) std::cout << s.name << "\n";
    } catch (const Error&) {
    }
    return 0;
  }
  if (words[0] == "snapshot" && words.size() == 2) std::cout << "delete\n";
  for (const char* f : {"--sandbox", "--timeout", "--force", "--json", "--yes", "--help"}) {
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
    throw UnknownCommandError(cmd, Commands(), "ss snap");
  }
  // The command line is checked before anything is asked of the backend.
  bool deleting = cmd == "snapshot" && o.words.size() >= 2 && o.words[1] == "delete";
  if (deleting && o.words.size() != 3) {
    throw UsageError("usage: ss snapshot delete NAME", "ss snapshot");
  } else if (cmd == "snapshot" && !deleting && o.words.size() > 2) {
    throw UsageError(Cat("unexpected argument '", o.words[2], "'"), "ss snapshot",
                     {"usage: ss snapshot [NAME]"});
  } else if (cmd == "restore" && o.words.size() != 2) {
    throw UsageError("usage: ss restore NAME", "ss restore");
  } else if ((cmd == "list" || cmd == "ls") && o.words.size() > 1) {
    throw UsageError(Cat("unexpected argument '", o.words[1], "'"), "ss snapshots",
                     {"usage: ss snapshots [--json]"});
  }
  if (o.words.size() >= 2 && !deleting) ValidateSnapshotName(o.words[1]);
  if (deleting) ValidateSnapshotName(o.words[2]);
  std::string name = ResolveSandboxName(o.sandbox);
  auto sandboxes = KnownSandboxes();
  if (std::find(sandboxes.begin(), sandboxes.end(), name) == sandboxes.end()) {
    throw Error(kExitNoInput, Cat("sandbox '", name, "' does not exist"), {},
                {"create it: ss start"});
  }
  Sandbox sandbox(name, Config::Load());
  if (cmd == "snapshot") {
    if (o.words.size() >= 2 && o.words[1] == "delete") return DeleteOne(o, sandbox);
    return Take(o, sandbox);
  }
  if (cmd == "restore") return Restore(o, sandbox);
  return List(o, sandbox);
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss-snap", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete")
      return ss::Complete({args.begin() + 1, args.end()});
    return ss::Run(ss::ParseArgs(args));
  });
}
