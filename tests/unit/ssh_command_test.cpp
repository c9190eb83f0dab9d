#include "ssh_command.hpp"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>

#include <filesystem>
#include <random>

#include "digest.hpp"
#include "error.hpp"
#include "process.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// Runs a remote command line the way sshd does (`shell -c LINE`), with `input` on stdin.
ProcessResult RunLine(const std::string& shell, const std::string& line, const std::string& input) {
  ProcessOptions o;
  o.input = input;
  return ss::Run({shell, "-c", line}, o);
}

std::string RandomValue(std::mt19937& rng) {
  std::uniform_int_distribution<int> len(0, 40), byte(1, 255);
  std::string v;
  for (int i = len(rng); i > 0; --i) v += static_cast<char>(byte(rng));
  return v;
}

TEST(SshCommand, EnvNames) {
  EXPECT_NO_THROW(CheckEnvName("ANTHROPIC_API_KEY"));
  EXPECT_NO_THROW(CheckEnvName("_x1"));
  for (const char* bad : {"", "1X", "A-B", "A B", "A=B", "Ä"}) {
    EXPECT_THROW(CheckEnvName(bad), Error) << bad;
  }
}

TEST(SshCommand, SecretsAreEncodedAsPrintableLines) {
  EXPECT_EQ(EncodeSecrets({{"A", "plain-value_1.2"}, {"B", "a b\n'$\\"}, {"C", ""}}),
            "A=plain-value_1.2\nB=a\\0040b\\0012\\0047\\0044\\0134\nC=\n\n");
  EXPECT_THROW(EncodeSecrets({{"A", std::string("x\0y", 3)}}), Error);
}

// The login shells a sandbox user may have.
const std::vector<std::string> kShells = {"/bin/sh", "/bin/bash", "/usr/bin/zsh", "/usr/bin/fish"};

TEST(SshCommand, PlainCommandLines) {
  EXPECT_EQ(BuildRemoteCommand({"ls", "-l", "a b"}, "", {}, false, "n").line, "ls -l 'a b'");
  RemoteCommand shell = BuildRemoteCommand({}, "", {}, true, "n");
  EXPECT_EQ(shell.line, "");  // the login shell, by a shell request
  EXPECT_TRUE(BuildRemoteCommand({"ls"}, "", {}, true, "n").preamble.empty());
}

// Run the way sshd runs them (`LOGIN-SHELL -c LINE`), lines mean the same in every login shell:
// the words, the directory ("~" the remote home), the login shell started there.
TEST(SshCommand, CommandLinesMeanTheSameInEveryLoginShell) {
  char tmpl[] = "/tmp/ss-cmd-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string home = tmpl, dir = home + "/it's a \\ dir";
  ASSERT_EQ(::mkdir(dir.c_str(), 0700), 0);
  const std::vector<std::string> words = {"a b", "it's", "\\", "$HOME", "*", "{a,b}", "=x", ""};
  std::vector<std::string> argv = {"printf", "[%s]"};
  argv.insert(argv.end(), words.begin(), words.end());
  for (const auto& sh : kShells) {
    ProcessOptions o;
    o.env = {{"HOME", home}, {"SHELL", "/bin/sh"}};
    auto run = [&](const RemoteCommand& cmd) { return ss::Run({sh, "-c", cmd.line}, o); };
    ProcessResult r = run(BuildRemoteCommand(argv, "", {}, false, "n"));
    EXPECT_EQ(r.out, "[a b][it's][\\][$HOME][*][{a,b}][=x][]") << sh << ": " << r.err;
    r = run(BuildRemoteCommand({"pwd"}, dir, {}, false, "n"));
    EXPECT_EQ(r.out, dir + "\n") << sh << ": " << r.err;
    r = run(BuildRemoteCommand({"pwd"}, "~/it's a \\ dir", {}, true, "n"));
    EXPECT_EQ(r.out, dir + "\n") << sh << ": " << r.err;
    o.input = "pwd\n";
    r = run(BuildRemoteCommand({}, "~/it's a \\ dir", {}, true, "n"));
    EXPECT_EQ(r.out, dir + "\n") << sh << ": " << r.err;
    o.input.reset();
  }
  std::filesystem::remove_all(home);
}

// The secret reader, run by real shells: every value arrives byte for byte, and the command's
// own stdin is untouched after the preamble.
TEST(SshCommand, SecretReaderExportsExactValuesInEveryShell) {
  std::mt19937 rng(7);
  for (const auto& shell : kShells) {
    for (int round = 0; round < 20; ++round) {
      // S1 starts with a mark that nothing else in the line could spell.
      EnvList secrets = {
          {"S1", "s3cr3t-" + RandomValue(rng)}, {"S2", RandomValue(rng)}, {"S_3", ""}};
      RemoteCommand cmd =
          BuildRemoteCommand({"sh", "-c", "printf '%s\\0' \"$S1\" \"$S2\" \"${S_3-unset}\"; cat"},
                             "", secrets, false, "n");
      EXPECT_TRUE(cmd.ready_marker.empty());
      EXPECT_EQ(cmd.line.find("s3cr3t-"), std::string::npos);
      std::string rest = "the command's own input\n\nmore";
      ProcessResult r = RunLine(shell, cmd.line, cmd.preamble + rest);
      ASSERT_EQ(r.status, 0) << shell << ": " << r.err;
      std::string want = Cat(secrets[0].second, std::string(1, '\0'), secrets[1].second,
                             std::string(1, '\0'), std::string(1, '\0'), rest);
      EXPECT_EQ(r.out, want) << shell;
    }
  }
}

TEST(SshCommand, PtyCommandSendsMarkersWithoutSpellingThem) {
  RemoteCommand cmd = BuildRemoteCommand({"env"}, "", {{"K", "v"}}, true, "0123abcd");
  EXPECT_EQ(cmd.ready_marker, "ss-secrets-ready-0123abcd");
  EXPECT_EQ(cmd.done_marker, "ss-secrets-done-0123abcd");
  // A shell that traces its commands must not print a marker before echo is off.
  EXPECT_EQ(cmd.line.find(cmd.ready_marker), std::string::npos);
  EXPECT_EQ(cmd.line.find(cmd.done_marker), std::string::npos);
  EXPECT_EQ(cmd.preamble, "K=v\n\n");
  // Without a terminal the script still works (stty fails quietly).
  ProcessResult r = RunLine("/bin/sh", cmd.line, cmd.preamble);
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("ss-secrets-ready-0123abcdss-secrets-done-0123abcd"), std::string::npos);
  EXPECT_NE(r.out.find("\nK=v\n"), std::string::npos);
}

TEST(SshCommand, MarkerFilterHidesTheHandshakeAtAnySplit) {
  const std::string ready = "ss-secrets-ready-ab", done = "ss-secrets-done-ab";
  const std::string stream = "motd ss-secrets-\r\n" + ready + "K=echoed\r\n" + done + "prompt$ ";
  for (size_t a = 0; a <= stream.size(); ++a) {
    for (size_t b = a; b <= stream.size(); b += 3) {
      MarkerFilter f(ready, done);
      std::string shown = f.Feed(stream.substr(0, a));
      bool ready_before = f.ready_seen();
      shown += f.Feed(stream.substr(a, b - a));
      shown += f.Feed(stream.substr(b));
      shown += f.Flush();
      EXPECT_EQ(shown, "motd ss-secrets-\r\nprompt$ ") << a << " " << b;
      EXPECT_TRUE(f.done_seen());
      if (a < stream.find(ready) + ready.size()) {
        EXPECT_FALSE(ready_before);
      }
    }
  }
  MarkerFilter unfinished(ready, done);
  EXPECT_EQ(unfinished.Feed("abc ss-secr"), "abc ");
  EXPECT_EQ(unfinished.Flush(), "ss-secr");
}

TEST(SshCommand, ExitStatusesAndSignals) {
  EXPECT_EQ(RemoteExitStatus(0, ""), 0);
  EXPECT_EQ(RemoteExitStatus(255, ""), 255);
  EXPECT_EQ(RemoteExitStatus(-1, "TERM"), 128 + SIGTERM);
  EXPECT_EQ(RemoteExitStatus(-1, "KILL"), 137);
  EXPECT_EQ(RemoteExitStatus(-1, ""), 255);
  EXPECT_EQ(RemoteExitStatus(-1, "NOSUCH"), 255);
  EXPECT_STREQ(SignalName(SIGINT), "INT");
  EXPECT_EQ(SignalNumber("HUP"), SIGHUP);
  EXPECT_EQ(SignalName(0), nullptr);
  EXPECT_EQ(RandomNonce().size(), 16u);
  EXPECT_NE(RandomNonce(), RandomNonce());
}

}  // namespace
}  // namespace ss
