#include "browser.hpp"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>

#include "strings.hpp"

namespace ss {
namespace {

// A private directory standing in for /tmp/claude-mcp-browser-bridge-$USER.
class BrowserDir : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ss-browser-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    dir_ = root_ + "/bridge";
    ASSERT_EQ(::mkdir(dir_.c_str(), 0700), 0);
    ::setenv("SS_BROWSER_SOCKET_DIR", dir_.c_str(), 1);
  }
  void TearDown() override {
    for (int fd : fds_) ::close(fd);
    ::unsetenv("SS_BROWSER_SOCKET_DIR");
    std::filesystem::remove_all(root_);
  }
  // A socket at dir_/name, listening or not, with `mode` and an mtime of `age` seconds ago.
  std::string Socket(const std::string& name, bool listen, mode_t mode = 0600, int age = 0) {
    std::string path = Cat(dir_, "/", name);
    int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::memcpy(a.sun_path, path.c_str(), path.size());
    EXPECT_EQ(::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
    if (listen) {
      EXPECT_EQ(::listen(fd, 4), 0);
      fds_.push_back(fd);
    } else {
      ::close(fd);
    }
    ::chmod(path.c_str(), mode);
    timespec t[2];
    ::clock_gettime(CLOCK_REALTIME, &t[0]);
    t[0].tv_sec -= age;
    t[1] = t[0];
    ::utimensat(AT_FDCWD, path.c_str(), t, AT_SYMLINK_NOFOLLOW);
    return path;
  }
  std::string root_, dir_;
  std::vector<int> fds_;
};

TEST_F(BrowserDir, NewestLiveSocketWinsStaleOnesAreListed) {
  std::string old_live = Socket("100.sock", true, 0600, 60);
  std::string newer_live = Socket("200.sock", true, 0600, 30);
  std::string newest_stale = Socket("300.sock", false, 0600, 0);
  Socket("notes.txt", false);  // not *.sock: ignored
  SocketDiscovery d = DiscoverHostSockets(true);
  EXPECT_TRUE(d.dir_exists);
  EXPECT_EQ(d.dir_problem, "");
  ASSERT_EQ(d.usable.size(), 3u);
  EXPECT_EQ(d.usable[0].path, newest_stale);
  EXPECT_EQ(d.usable[1].path, newer_live);
  EXPECT_EQ(d.usable[2].path, old_live);
  EXPECT_EQ(d.live, newer_live);
  EXPECT_EQ(d.stale, std::vector<std::string>{newest_stale});
  // Per connection: every usable one, newest first (the connection itself is the test).
  std::vector<SocketAddress> targets = HostSocketTargets();
  ASSERT_EQ(targets.size(), 3u);
  EXPECT_EQ(targets[0].socket_path, newest_stale);
}

TEST_F(BrowserDir, SocketsOpenToOthersOrNotSocketsAreRefused) {
  std::string open = Socket("1.sock", true, 0666);
  std::string file = dir_ + "/2.sock";
  FILE* f = std::fopen(file.c_str(), "w");
  std::fclose(f);
  ::chmod(file.c_str(), 0600);
  SocketDiscovery d = DiscoverHostSockets(true);
  EXPECT_TRUE(d.usable.empty());
  EXPECT_EQ(d.live, "");
  ASSERT_EQ(d.refused.size(), 2u);
  EXPECT_EQ(d.refused[0].path, open);
  EXPECT_EQ(d.refused[0].problem, "is readable or writable by others (mode 0666)");
  EXPECT_EQ(d.refused[1].problem, "is not a socket");
  BrowserReport r = CheckBrowserHost(1);
  EXPECT_EQ(r.mode, BrowserMode::kNone);
  EXPECT_EQ(r.warnings[0],
            Cat("refusing ", open, ": it is readable or writable by others (mode 0666)"));
}

TEST_F(BrowserDir, ADirectoryOpenToOthersOrASymlinkIsRefusedWhole) {
  Socket("1.sock", true);
  ::chmod(dir_.c_str(), 0755);
  SocketDiscovery d = DiscoverHostSockets(true);
  EXPECT_EQ(d.dir_problem, "is readable or writable by others (mode 0755)");
  EXPECT_TRUE(d.usable.empty());
  ::chmod(dir_.c_str(), 0700);
  std::string link = root_ + "/link";
  ASSERT_EQ(::symlink(dir_.c_str(), link.c_str()), 0);
  ::setenv("SS_BROWSER_SOCKET_DIR", link.c_str(), 1);
  EXPECT_EQ(DiscoverHostSockets(true).dir_problem, "is a symbolic link");
  ::setenv("SS_BROWSER_SOCKET_DIR", (root_ + "/missing").c_str(), 1);
  d = DiscoverHostSockets(true);
  EXPECT_FALSE(d.dir_exists);
  EXPECT_TRUE(HostSocketTargets().empty());
}

TEST(Browser, AgentVersionAndTheRelay) {
  auto v = ParseAgentVersion("2.1.332 (Claude Code)\n");
  ASSERT_TRUE(v);
  EXPECT_EQ(v->text, "2.1.332");
  EXPECT_TRUE(UsesRelay(*v));
  EXPECT_TRUE(UsesRelay(*ParseAgentVersion("2.1.92")));
  EXPECT_FALSE(UsesRelay(*ParseAgentVersion("2.1.91 (Claude Code)")));
  EXPECT_FALSE(UsesRelay(*ParseAgentVersion("1.9.999")));
  EXPECT_TRUE(UsesRelay(*ParseAgentVersion("3.0.0")));
  EXPECT_FALSE(ParseAgentVersion("command not found"));
  EXPECT_FALSE(ParseAgentVersion(""));
}

TEST(Browser, ConnectedLinesAndTheFallbackNoteAreTheSpecs) {
  EXPECT_EQ(ConnectedLine(BrowserMode::kSocket), "Browser: Connected (Claude in Chrome)");
  EXPECT_EQ(ConnectedLine(BrowserMode::kDevTools), "Browser: Connected (Chrome DevTools)");
  std::vector<std::string> note = DevToolsNote();
  ASSERT_EQ(note.size(), 2u);
  EXPECT_EQ(note[0], "  Note: Using fallback mode. For seamless experience,");
  EXPECT_EQ(note[1], Cat("  run 'claude --chrome' on ", HostWord(), "."));
}

TEST(Browser, TheUnavailableBoxHasBothOptions) {
  std::string box = UnavailableBox();
  for (const char* line :
       {"Browser Integration Unavailable", "Neither browser automation method is available.",
        "Option 1 (Recommended):", "Option 2 (DevTools Fallback):",
        "Note: This uses a separate Chrome profile", "Then run 'ss <project>' again."}) {
    EXPECT_NE(box.find(line), std::string::npos) << line;
  }
  EXPECT_NE(box.find(Cat("Run 'claude --chrome' on ", HostWord(), " and keep it running")),
            std::string::npos);
  EXPECT_NE(box.find(Cat("Run '", ChromeDebugScriptDisplay(), "'")), std::string::npos);
  EXPECT_EQ(box.rfind("╭", 0), 0u);
}

BrowserReport Report(bool installed, bool integration, std::optional<bool> chrome, bool cdp) {
  BrowserReport r;
  r.claude_installed = installed;
  r.integration = integration;
  r.chrome_running = chrome;
  r.cdp.port = 9222;
  r.cdp.available = cdp;
  r.mode = cdp ? BrowserMode::kDevTools : BrowserMode::kNone;
  return r;
}

TEST(Browser, CheckMessagesFollowThePrimaryProblemThenTheFallback) {
  auto lines = CheckMessages(Report(true, true, true, true));
  EXPECT_EQ(lines, (std::vector<std::string>{"Warning: Claude in Chrome socket not found", "",
                                             "Checking for Chrome DevTools fallback...",
                                             "Found Chrome with remote debugging on port 9222.",
                                             "Using Chrome DevTools MCP for browser automation."}));
  lines = CheckMessages(Report(true, true, true, false));
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "Warning: Claude in Chrome socket not found", "",
                       "Checking for Chrome DevTools fallback...",
                       "Error: No browser integration available", "",
                       "Option 1 (Recommended): Run 'claude --chrome' on host",
                       "Option 2 (Fallback): Start Chrome with debugging:",
                       Cat("  ", ChromeDebugScriptDisplay()), "", "Then run 'ss' again."}));
  lines = CheckMessages(Report(true, true, false, false));
  EXPECT_EQ(lines, (std::vector<std::string>{
                       "Error: Chrome is not running", "", "Start Chrome and try again.", "",
                       "For browser automation, either:", "  • Run 'claude --chrome' on host, or",
                       Cat("  • Run '", ChromeDebugScriptDisplay(), "'")}));
  lines = CheckMessages(Report(false, false, std::nullopt, false));
  EXPECT_EQ(lines[0], "Error: Claude Code is not installed");
  EXPECT_EQ(lines[5], "  npm install -g @anthropic-ai/claude-code");
  EXPECT_NE(std::find(lines.begin(), lines.end(), "Error: Browser integration unavailable"),
            lines.end());
  EXPECT_NE(std::find(lines.begin(), lines.end(), "           --remote-debugging-port=9222 \\"),
            lines.end());
  lines = CheckMessages(Report(true, false, std::nullopt, false));
  EXPECT_EQ(lines[0], "Error: Claude Code Chrome integration not found");
  EXPECT_EQ(lines[5], "This sets up the browser bridge. Then run 'ss' again.");
}

TEST(Browser, StatusSummarySaysTheModeAndTheRelay) {
  BrowserReport r = Report(true, true, true, true);
  EXPECT_EQ(StatusSummary(r, std::nullopt), "connected (Chrome DevTools, port 9222)");
  r.mode = BrowserMode::kSocket;
  EXPECT_EQ(StatusSummary(r, ParseAgentVersion("2.1.91")), "connected (Claude in Chrome)");
  EXPECT_EQ(StatusSummary(r, ParseAgentVersion("2.1.332")),
            "connected (Claude in Chrome); Claude Code 2.1.332 in the sandbox reaches Claude in "
            "Chrome through Anthropic's relay");
  r.mode = BrowserMode::kNone;
  EXPECT_EQ(StatusSummary(r, std::nullopt),
            Cat("not available (run 'claude --chrome' on ", HostWord(), ", or ",
                ChromeDebugScriptDisplay(), ")"));
}

TEST(Browser, ARefusedDevToolsPortSaysSo) {
  CdpInfo info = DetectCdp(1);
  EXPECT_FALSE(info.available);
  EXPECT_EQ(info.error, "nothing listens on 127.0.0.1:1");
}

}  // namespace
}  // namespace ss
