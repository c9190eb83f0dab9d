// The package table (lib/packages.tsv): well formed, and naming every program ss runs.
#include "host_commands.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>

#include "strings.hpp"

namespace ss {
namespace {

TEST(HostCommands, EveryRowIsWellFormed) {
  const std::set<std::string> steps = {"build",  "core", "image", "lxd",  "docker",
                                       "podman", "qemu", "lima",  "lume", "fence",
                                       "github", "test", "bench"};
  ASSERT_FALSE(HostCommands().empty());
  std::set<std::string> seen;
  for (const auto& row : HostCommands()) {
    EXPECT_FALSE(row.packages.empty()) << row.command;
    for (const auto& step : row.needed_by) {
      EXPECT_TRUE(steps.count(step)) << row.command << ": " << step;
    }
    if (row.command != "-") {
      EXPECT_TRUE(seen.insert(row.command).second) << row.command << " twice";
    }
  }
}

TEST(HostCommands, StepsNameTheirTools) {
  auto image = CommandsNeededBy("image");
  for (const char* tool : {"debootstrap", "chroot", "tar", "mkfs.ext4", "qemu-img"}) {
    EXPECT_NE(std::find(image.begin(), image.end(), tool), image.end()) << tool;
  }
  auto lxd = CommandsNeededBy("lxd");
  EXPECT_NE(std::find(lxd.begin(), lxd.end(), "lxc"), lxd.end());
  EXPECT_EQ(FindHostCommand("/usr/lib/qemu/virtiofsd")->packages,
            (std::vector<std::string>{"virtiofsd", "qemu-system-common"}));
  EXPECT_EQ(FindHostCommand("no-such-program"), nullptr);
}

TEST(HostCommands, InstallHintNamesThePackage) {
  EXPECT_NE(InstallHint("qemu-img").find("apt-get install qemu-utils"), std::string::npos);
}

// Every program the library and the tools run by name is in the table: a new Run({"x", ...})
// without its row fails here, even on a path no other test takes.
TEST(HostCommands, EveryProgramTheSourceRunsIsListed) {
  const std::regex call(R"re(\b(?:Run|RunChecked|Spawn|StartChild)\(\{"([^"]+)")re");
  int found = 0;
  for (const char* dir : {"lib", "tools"}) {
    for (const auto& entry :
         std::filesystem::recursive_directory_iterator(Cat(SS_SOURCE_DIR, "/", dir))) {
      if (entry.path().extension() != ".cpp") continue;
      std::ifstream in(entry.path());
      std::stringstream text;
      text << in.rdbuf();
      std::string source = text.str();
      for (std::sregex_iterator it(source.begin(), source.end(), call), end; it != end; ++it) {
        ++found;
        EXPECT_NE(FindHostCommand((*it)[1].str()), nullptr)
            << entry.path().filename().string() << " runs '" << (*it)[1] << "'";
      }
    }
  }
  EXPECT_GT(found, 30);  // the scan sees the calls at all
}

}  // namespace
}  // namespace ss
