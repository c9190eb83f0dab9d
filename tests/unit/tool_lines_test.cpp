// The tools' command lines (lib/cli), parsed as the tools parse them, and their tables checked
// for what the compiler cannot see.
#include <gtest/gtest.h>

#include <algorithm>

#include "error.hpp"
#include "snap_line.hpp"
#include "sync_line.hpp"
#include "vm_line.hpp"

namespace ss {
namespace {

const std::vector<const CommandTable*>& Tables() {
  static const std::vector<const CommandTable*> tables = {&SnapCommands(), &SyncCommands(),
                                                          &VmCommands()};
  return tables;
}

// An option that names a command the tool does not have would never be allowed anywhere.
TEST(ToolLines, EveryOptionNamesCommandsOfItsTool) {
  for (const auto* table : Tables()) {
    const auto& commands = table->spec().commands;
    for (const auto& o : table->spec().options) {
      for (const auto& c : o.commands) {
        EXPECT_TRUE(std::any_of(commands.begin(), commands.end(),
                                [&](const CommandSpec& s) { return s.name == c; }))
            << table->spec().help_command << ": --" << o.name << " names '" << c << "'";
      }
    }
  }
}

TEST(ToolLines, EveryCommandAndOptionIsInTheHelp) {
  for (const auto* table : Tables()) {
    std::string help = table->Help();
    for (const auto& c : table->spec().commands) {
      EXPECT_NE(help.find("\n  " + c.name), std::string::npos) << c.name;
      EXPECT_LE(c.min_args, c.max_args) << c.name;
    }
    for (const auto& o : table->spec().options) {
      EXPECT_NE(help.find("--" + o.name), std::string::npos) << o.name;
    }
  }
}

TEST(SnapLine, CommandsArgumentsAndOptions) {
  SnapLine o = ParseSnapLine({"snapshot", "delete", "s1", "--yes", "--sandbox", "box"});
  EXPECT_EQ(o.command, "snapshot delete");
  EXPECT_EQ(o.name, "s1");
  EXPECT_TRUE(o.yes);
  EXPECT_EQ(o.sandbox, "box");
  o = ParseSnapLine({"snapshot"});
  EXPECT_EQ(o.command, "snapshot");
  EXPECT_EQ(o.name, "");
  o = ParseSnapLine({"restore", "s1", "--timeout", "5", "--force"});
  EXPECT_EQ(o.timeout, 5);
  EXPECT_TRUE(o.force);
  EXPECT_EQ(ParseSnapLine({"ls", "--json"}).command, "list");
  EXPECT_THROW(ParseSnapLine({"restore"}), Error);
  EXPECT_THROW(ParseSnapLine({"restore", "a", "b"}), Error);
  EXPECT_THROW(ParseSnapLine({"snapshot", "--yes"}), Error);
  EXPECT_THROW(ParseSnapLine({"restore", "s1", "--timeout", "0"}), Error);
}

TEST(SyncLine, CommandsArgumentsAndOptions) {
  SyncLine o = ParseSyncLine({"apply", "app", "--merge", "-y"});
  EXPECT_EQ(o.command, "apply");
  EXPECT_EQ(o.args, (std::vector<std::string>{"app"}));
  EXPECT_TRUE(o.merge);
  EXPECT_TRUE(o.yes);
  o = ParseSyncLine({"push", "a", "b", "--project", "app"});
  EXPECT_EQ(o.args, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(o.project, "app");
  EXPECT_TRUE(ParseSyncLine({"sync", "-n", "--json", "--project", "app"}).dry_run);
  EXPECT_THROW(ParseSyncLine({"diff", "--json"}), Error);
  EXPECT_THROW(ParseSyncLine({"push", "a"}), Error);
  EXPECT_THROW(ParseSyncLine({"sync", "a", "b"}), Error);
  EXPECT_THROW(ParseSyncLine({"sync", "--timeout", "-1"}), Error);
}

TEST(VmLine, CommandsArgumentsAndOptions) {
  VmLine o = ParseVmLine({"image", "build", "--release", "trixie", "--force", "--json"});
  EXPECT_EQ(o.command, "image build");
  EXPECT_EQ(o.release, "trixie");
  EXPECT_EQ(o.mirror, "http://deb.debian.org/debian");
  EXPECT_TRUE(o.force && o.json);
  o = ParseVmLine({"image", "list"});
  EXPECT_EQ(o.command, "image ls");
  o = ParseVmLine({"start", "--fish", "--deploy", "/d", "--timeout", "90", "--backend", "lxd"});
  EXPECT_TRUE(o.fish);
  EXPECT_EQ(o.deploy, "/d");
  EXPECT_EQ(o.timeout, 90);
  EXPECT_EQ(ParseVmLine({"stop"}).timeout, -1);
  EXPECT_EQ(ParseVmLine({"health-check", "box"}).args, (std::vector<std::string>{"box"}));
  // The mistakes of the issue: flags of another command, and commands that take no argument.
  EXPECT_THROW(ParseVmLine({"list", "--release", "trixie", "--mirror", "x", "--force"}), Error);
  EXPECT_THROW(ParseVmLine({"status", "--deploy", "/d"}), Error);
  EXPECT_THROW(ParseVmLine({"start", "extra"}), Error);
  EXPECT_THROW(ParseVmLine({"image"}), Error);
  EXPECT_THROW(ParseVmLine({"stop", "--timeout", "0"}), Error);
}

}  // namespace
}  // namespace ss
