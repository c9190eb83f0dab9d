// ss-update: `ss update` checks the release feed and installs a newer release in place. The
// feed, the checks and how the binaries are replaced: lib/sandbox/update.hpp.
#include <cstdlib>
#include <iostream>

#include "config.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "strings.hpp"
#include "tool.hpp"
#include "update.hpp"
#include "update_line.hpp"
#include "version.hpp"

namespace ss {
namespace {

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

int Update(const UpdateLine& o) {
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

int Run(const UpdateLine& o) {
  if (o.help) {
    std::cout << kUpdateUsage;
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
    return ss::Run(ss::ParseUpdateLine(args));
  });
}
