// The tools' command lines (lib/cli), parsed as the tools parse them, and their tables checked
// for what the compiler cannot see.
#include <gtest/gtest.h>

#include <algorithm>

#include "attach_line.hpp"
#include "config_line.hpp"
#include "error.hpp"
#include "net_line.hpp"
#include "project_line.hpp"
#include "snap_line.hpp"
#include "sync_line.hpp"
#include "tunnel_line.hpp"
#include "update_line.hpp"
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

TEST(TunnelLine, SshGrammar) {
  TunnelLine o = ParseTunnelLine({"-L8080:localhost:80", "-R", "/tmp/s:/tmp/t", "-N", "-p2222",
                                  "--known-hosts=/k", "-i", "/id", "--browser", "u@h"});
  ASSERT_EQ(o.forwards.size(), 2u);
  EXPECT_EQ(o.forwards[0].direction, ForwardDirection::kLocal);
  EXPECT_EQ(o.forwards[1].direction, ForwardDirection::kRemote);
  EXPECT_TRUE(o.no_shell && o.browser);
  EXPECT_EQ(o.dest_flags.port, 2222);
  EXPECT_EQ(o.dest_flags.known_hosts, "/k");
  EXPECT_EQ(o.dest_flags.identity, "/id");
  EXPECT_EQ(o.dest, "u@h");
  EXPECT_TRUE(ParseTunnelLine({"--check", "--json"}).check);
  EXPECT_THROW(ParseTunnelLine({"-p", "70000", "box"}), Error);
  EXPECT_THROW(ParseTunnelLine({"-L", "8080", "box"}), Error);
  EXPECT_THROW(ParseTunnelLine({"box", "ls"}), Error);
  EXPECT_THROW(ParseTunnelLine({"-L"}), Error);
  EXPECT_THROW(ParseTunnelLine({"--bogus", "box"}), Error);
}

TEST(NetLine, VerbsAndTheirOwnFlags) {
  NetLine o = ParseNetLine({"allow", "example.com", "*.x.org", "--sandbox", "box"});
  EXPECT_EQ(o.verb, "allow");
  EXPECT_EQ(o.words, (std::vector<std::string>{"example.com", "*.x.org"}));
  EXPECT_EQ(o.sandbox, "box");
  o = ParseNetLine({"fence", "apply", "--sandbox", "box", "--interface", "ssn-box", "--gateway",
                    "10.0.0.1", "--proxy-port", "1", "--transparent-port", "2", "--dns-port", "3"});
  EXPECT_EQ(o.fence.interface, "ssn-box");
  EXPECT_EQ(o.fence.dns_port, 3);
  EXPECT_EQ(o.fence.connections, 0);
  o = ParseNetLine({"fence", "apply", "--sandbox", "box", "--interface", "ssn-box", "--gateway",
                    "10.0.0.1", "--proxy-port", "1", "--transparent-port", "2", "--dns-port", "3",
                    "--connections", "300"});
  EXPECT_EQ(o.fence.connections, 300);
  EXPECT_EQ(
      ParseNetLine({"serve", "--sandbox", "box", "--proxy", "127.0.0.1:0", "--connections", "40"})
          .connections,
      40);
  EXPECT_THROW(
      ParseNetLine({"serve", "--sandbox", "box", "--proxy", "127.0.0.1:0", "--connections", "0"}),
      Error);
  EXPECT_THROW(ParseNetLine({"allow", "x.org", "--connections", "5"}), Error);
  EXPECT_EQ(ParseNetLine({"relay", "--sandbox", "box", "--to", "dns"}).to, "dns");
  EXPECT_THROW(ParseNetLine({"allow"}), Error);
  EXPECT_THROW(ParseNetLine({"ls", "--follow"}), Error);
  EXPECT_THROW(ParseNetLine({"mode", "open", "--proxy", "127.0.0.1:0"}), Error);
  EXPECT_THROW(ParseNetLine({"fence", "apply", "--sandbox", "box"}), Error);
  EXPECT_THROW(ParseNetLine({"fence", "check", "--sandbox", "box", "--dhcp"}), Error);
  EXPECT_THROW(ParseNetLine({"relay", "--sandbox", "box", "--to", "web"}), Error);
  EXPECT_THROW(ParseNetLine({"nope"}), Error);
  EXPECT_THROW(ParseNetLine({"ca", "--sandbox", "box"}), Error);
  EXPECT_THROW(ParseNetLine({"ls", "extra"}), Error);
  EXPECT_EQ(ParseNetLine({"fence", "check", "--sandbox", "box"}).words,
            (std::vector<std::string>{"check"}));
}

TEST(ConfigLine, ActionsAndAValueThatStartsWithADash) {
  EXPECT_EQ(ParseConfigLine({}).action, "menu");
  EXPECT_EQ(ParseConfigLine({"--json"}).action, "show");
  ConfigLine o = ParseConfigLine({"set", "memory", "-1GB"});
  EXPECT_EQ(o.action, "set");
  EXPECT_EQ(o.key, "memory");
  EXPECT_EQ(o.value, "-1GB");
  o = ParseConfigLine({"get", "vm.cpus", "--json"});
  EXPECT_EQ(o.key, "vm.cpus");
  EXPECT_TRUE(o.json);
  EXPECT_EQ(ParseConfigLine({"set", "--help"}).action, "help");
  EXPECT_THROW(ParseConfigLine({"get"}), Error);
  EXPECT_THROW(ParseConfigLine({"set", "memory"}), Error);
  EXPECT_THROW(ParseConfigLine({"frob"}), Error);
  EXPECT_THROW(ParseConfigLine({"path", "--json"}), Error);
}

TEST(AttachLine, SessionsTheirCommandsAndTheirOptions) {
  AttachLine o = ParseAttachLine({"my-app", "-t", "--env", "A=1", "--secret", "TOKEN", "--mount",
                                  "/srv/data:/data:ro", "--timeout", "90"});
  EXPECT_EQ(o.verb, "");
  EXPECT_EQ(o.words, (std::vector<std::string>{"my-app"}));
  EXPECT_TRUE(o.terminal);
  EXPECT_FALSE(o.force_tty);
  EXPECT_EQ(o.env, (std::vector<std::string>{"A=1"}));
  EXPECT_EQ(o.secrets, (std::vector<std::string>{"TOKEN"}));
  ASSERT_EQ(o.mounts.size(), 1u);
  EXPECT_TRUE(o.mounts[0].read_only);
  EXPECT_EQ(o.timeout, 90);
  o = ParseAttachLine({"exec", "app", "--", "ls", "--sandbox", "-la"});
  EXPECT_EQ(o.verb, "exec");
  EXPECT_TRUE(o.has_command);
  EXPECT_EQ(o.command, (std::vector<std::string>{"ls", "--sandbox", "-la"}));
  EXPECT_EQ(o.sandbox, "");
  o = ParseAttachLine({"docker", "ps", "--all"});
  EXPECT_EQ(o.words, (std::vector<std::string>{"ps", "--all"}));
  EXPECT_TRUE(ParseAttachLine({"run", ".", "--copy"}).copy.value_or(false));
  EXPECT_THROW(ParseAttachLine({"my-app", "--copy"}), Error);
  EXPECT_THROW(ParseAttachLine({"my-app", "--ephemeral", "--keep"}), Error);
  EXPECT_THROW(ParseAttachLine({"my-app", "--no-mount", "--mount", "/a:/b"}), Error);
  EXPECT_THROW(ParseAttachLine({"my-app", "--timeout", "0"}), Error);
  EXPECT_THROW(ParseAttachLine({"my-app", "--env", "1BAD"}), Error);
  EXPECT_THROW(ParseAttachLine({"my-app", "--bogus"}), Error);
}

TEST(UpdateLine, CheckAndHelp) {
  EXPECT_TRUE(ParseUpdateLine({"--check"}).check);
  EXPECT_TRUE(ParseUpdateLine({"-h"}).help);
  EXPECT_ANY_THROW(ParseUpdateLine({"--chec"}));  // no abbreviations
}

}  // namespace
}  // namespace ss
