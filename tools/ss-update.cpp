// ss-update: `ss update` checks the release feed and installs a newer release in place. The
// feed, the checks and how the binaries are replaced: lib/sandbox/update.hpp.
#include <boost/program_options.hpp>
#include <cstdlib>
#include <iostream>

#include "config.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "strings.hpp"
#include "tool.hpp"
#include "update.hpp"
#include "version.hpp"

namespace po = boost::program_options;

namespace ss {
namespace {

constexpr const char* kUsage = R"(usage: ss update [--check]

Check the release feed (updates.feed in config.yaml) for a newer ss and install it: the download
is checked against the release's checksums.txt, and the installed binaries are replaced only
when every new one is in place, so a failed update leaves the old version working.

Options:
  --check     only report the current and the latest version; exit 1 if an update is available
  -h, --help  show this help
)";

struct Options {
  bool check = false;
  bool background = false;
  bool help = false;
};

Options ParseArgs(const Args& args) {
  Options o;
  po::options_description desc;
  desc.add_options()("check", po::bool_switch(&o.check))(
      "background", po::bool_switch(&o.background))("help,h", po::bool_switch(&o.help));
  po::variables_map vm;
  po::store(po::command_line_parser(args)
                .options(desc)
                .style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing)
                .run(),
            vm);
  po::notify(vm);
  return o;
}

std::string Current() {
  if (const char* v = std::getenv("SS_UPDATE_CURRENT_VERSION"); v && *v) return v;
  return std::string(Version());
}

bool Newer(const std::string& latest) {
  auto a = ParseSemVer(latest);
  auto b = ParseSemVer(Current());
  return a && b && CompareSemVer(*a, *b) > 0;
}

// The daily check started on launch: stage the newest release for the next run. Quiet; its
// output goes to the log in UpdateDir().
int Background() {
  Config config = Config::Load();
  if (!config.UpdatesEnabled()) return 0;
  std::string dir = UpdateDir();
  MakeDirs(dir, 0700);
  auto lock = FileLock::TryLock(dir + "/lock");
  if (!lock) return 0;
  Release r = FetchLatestRelease(config.String("updates.feed"));
  if (!Newer(r.version)) return 0;
  std::string staged = dir + "/staged";
  if (auto have = ReadFileIfExists(staged + "/VERSION"); have && Trim(*have) == r.version) return 0;
  if (PathExists(staged)) RemoveTree(staged);
  StageRelease(r, staged);
  return 0;
}

int Update(const Options& o) {
  if (const char* no = std::getenv("SS_NO_UPDATE"); no && *no) {
    throw Error(kExitUnavailable, "updates are turned off (SS_NO_UPDATE is set)", {},
                {"unset SS_NO_UPDATE to update"});
  }
  Config config = Config::Load();
  Release r = FetchLatestRelease(config.String("updates.feed"));
  std::cout << "Current version: " << Current() << "\n"
            << "Latest version:  " << r.version << "\n"
            << std::flush;
  if (!Newer(r.version)) {
    std::cout << "\nss is up to date.\n";
    return 0;
  }
  if (o.check) {
    std::cout << "\nRun 'ss update' to install.\n";
    return kExitFailure;
  }
  std::cout << "\nUpdating...\n" << std::flush;
  std::string dir = UpdateDir();
  MakeDirs(dir, 0700);
  FileLock lock(dir + "/lock", FileLock::kExclusive, std::chrono::seconds(60), "the update lock");
  TempDir work(dir, "manual.");
  std::string staged = work.path() + "/release";
  StageRelease(r, staged);
  InstallStaged(staged, InstallPrefix());
  if (PathExists(dir + "/staged")) RemoveTree(dir + "/staged");
  std::cout << "Updated to " << r.version << "\n";
  return 0;
}

int Run(const Options& o) {
  if (o.help) {
    std::cout << kUsage;
    return 0;
  }
  if (o.background) return Background();
  return Update(o);
}

}  // namespace
}  // namespace ss

int main(int argc, char** argv) {
  return ss::RunTool("ss-update", argc, argv, [](const ss::Args& args) {
    if (!args.empty() && args[0] == "--complete") {
      if (args.size() <= 2) std::cout << "--check\n--help\n";
      return 0;
    }
    return ss::Run(ss::ParseArgs(args));
  });
}
