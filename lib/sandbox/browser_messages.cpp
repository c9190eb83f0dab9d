// What ss says about the browser (browser.hpp): the spec's texts for each way it is reached, or
// not, and the script that starts Chrome with debugging.
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "box.hpp"
#include "browser.hpp"
#include "error.hpp"
#include "fs.hpp"
#include "output.hpp"
#include "paths.hpp"
#include "process.hpp"
#include "resources.hpp"
#include "strings.hpp"
namespace ss {
namespace {

constexpr const char* kProfileDisplay = "~/.super-sandbox/chrome-debug-profile";

std::vector<std::string> BothUnavailableBlock(int port) {
  std::vector<std::string> lines = {
      "Error: Browser integration unavailable",
      "",
      "Neither Claude in Chrome nor Chrome DevTools debugging is available.",
      "",
      "To enable browser automation:",
      "",
      "  Primary (Claude in Chrome):",
      "    1. Run 'claude --chrome' on host",
      "    2. Keep it running",
      "",
      "  Fallback (Chrome DevTools):",
      Cat("    1. Run ", ChromeDebugScriptDisplay())};
  std::vector<std::string> manual = ManualChromeCommand(port);
  for (size_t i = 0; i < manual.size(); ++i) {
    lines.push_back(Cat(i == 0 ? "    2. Or: " : "           ", manual[i]));
  }
  lines.insert(lines.end(), {"", "Then run 'ss' again."});
  return lines;
}

}  // namespace

std::string HostWord() {
#ifdef __APPLE__
  return "your Mac";
#else
  return "the host";
#endif
}

std::string ChromeDebugScriptDisplay() { return DisplayPath(SsHome() + "/start-chrome-debug.sh"); }

std::vector<std::string> ManualChromeCommand(int port) {
  std::string chrome;
#ifdef __APPLE__
  chrome = "/Applications/Google\\ Chrome.app/Contents/MacOS/Google\\ Chrome";
#else
  chrome = "google-chrome";
  for (const char* name :
       {"google-chrome", "google-chrome-stable", "chromium", "chromium-browser"}) {
    if (FindInPath(name)) {
      chrome = name;
      break;
    }
  }
#endif
  return {Cat(chrome, " \\"), Cat("--remote-debugging-port=", port, " \\"),
          "--user-data-dir=\"$HOME/.super-sandbox/chrome-debug-profile\""};
}

std::string ConnectedLine(BrowserMode mode) {
  if (mode == BrowserMode::kSocket) return "Browser: Connected (Claude in Chrome)";
  if (mode == BrowserMode::kDevTools) return "Browser: Connected (Chrome DevTools)";
  return "Browser: Not available";
}

std::vector<std::string> DevToolsNote() {
  return {"  Note: Using fallback mode. For seamless experience,",
          Cat("  run 'claude --chrome' on ", HostWord(), ".")};
}

std::string UnavailableBox() {
  return Box({"Browser Integration Unavailable", "",
              "Neither browser automation method is available.", "", "Option 1 (Recommended):",
              Cat("  Run 'claude --chrome' on ", HostWord(), " and keep it running"), "",
              "Option 2 (DevTools Fallback):", Cat("  Run '", ChromeDebugScriptDisplay(), "'"),
              "  Note: This uses a separate Chrome profile", "", "Then run 'ss <project>' again."},
             71);
}

std::string DevToolsFirstUseBox() {
  return Box({"Chrome DevTools Fallback Active", "", "Connected to Chrome debug port.", "",
              "Note: This uses a separate Chrome profile at:", Cat("  ", kProfileDisplay), "",
              "You may need to log into websites in this browser window.",
              "Your sessions will persist between runs."},
             71);
}

std::vector<std::string> RelayLines(const AgentVersion& v, BrowserMode mode) {
  if (!UsesRelay(v)) return {};
  if (mode == BrowserMode::kSocket) {
    return {Cat("  Relay: Claude Code ", v.text,
                " in the sandbox sends Claude in Chrome's commands through Anthropic's"),
            "  relay (log in with /login, the extension's account); the socket serves its "
            "identity checks only."};
  }
  return {Cat("  Relay: Claude Code ", v.text,
              " in the sandbox can also reach Claude in Chrome through Anthropic's"),
          "  relay (log in with /login, the extension's account)."};
}

std::vector<std::string> CheckMessages(const BrowserReport& r) {
  std::vector<std::string> out;
  if (r.mode == BrowserMode::kSocket) {
    out.push_back(ConnectedLine(BrowserMode::kSocket));
    return out;
  }
  enum { kNotInstalled, kNoIntegration, kChromeNotRunning, kNotFound } primary;
  if (!r.claude_installed) {
    primary = kNotInstalled;
    out = {"Error: Claude Code is not installed",
           "",
           "Super-Sandbox requires Claude Code on the host for browser integration.",
           "",
           "Install it:",
           "  npm install -g @anthropic-ai/claude-code",
           "",
           "Then run 'ss' again."};
  } else if (!r.integration) {
    primary = kNoIntegration;
    out = {"Error: Claude Code Chrome integration not found",
           "",
           "Run this command on your host (not in the sandbox):",
           "  claude --chrome",
           "",
           "This sets up the browser bridge. Then run 'ss' again."};
  } else if (r.chrome_running && !*r.chrome_running && !r.cdp.available) {
    primary = kChromeNotRunning;
    out = {"Error: Chrome is not running",
           "",
           "Start Chrome and try again.",
           "",
           "For browser automation, either:",
           "  • Run 'claude --chrome' on host, or",
           Cat("  • Run '", ChromeDebugScriptDisplay(), "'")};
  } else {
    primary = kNotFound;
    out = {"Warning: Claude in Chrome socket not found"};
  }
  out.push_back("");
  if (r.cdp.available) {
    out.insert(out.end(), {"Checking for Chrome DevTools fallback...",
                           Cat("Found Chrome with remote debugging on port ", r.cdp.port, "."),
                           "Using Chrome DevTools MCP for browser automation."});
    return out;
  }
  if (primary == kChromeNotRunning) {
    out.pop_back();
    return out;
  }
  if (primary == kNotFound) {
    out.push_back("Checking for Chrome DevTools fallback...");
    out.insert(out.end(), {"Error: No browser integration available", "",
                           Cat("Option 1 (Recommended): Run 'claude --chrome' on host"),
                           "Option 2 (Fallback): Start Chrome with debugging:",
                           Cat("  ", ChromeDebugScriptDisplay()), "", "Then run 'ss' again."});
    return out;
  }
  std::vector<std::string> both = BothUnavailableBlock(r.cdp.port);
  out.insert(out.end(), both.begin(), both.end());
  return out;
}

std::string StatusSummary(const BrowserReport& r, const std::optional<AgentVersion>& agent) {
  std::string s;
  if (r.mode == BrowserMode::kSocket) {
    s = "connected (Claude in Chrome)";
  } else if (r.mode == BrowserMode::kDevTools) {
    s = Cat("connected (Chrome DevTools, port ", r.cdp.port, ")");
  } else {
    s = Cat("not available (run 'claude --chrome' on ", HostWord(), ", or ",
            ChromeDebugScriptDisplay(), ")");
  }
  if (agent && UsesRelay(*agent)) {
    s += Cat("; Claude Code ", agent->text,
             " in the sandbox reaches Claude in Chrome through Anthropic's relay");
  }
  return s;
}

std::string WriteChromeDebugScript(int port) {
  std::string path = SsHome() + "/start-chrome-debug.sh";
  std::string text = RenderTemplate(RequireResource("lib/templates/start-chrome-debug.sh"),
                                    {{"cdp_port", std::to_string(port)}});
  if (ReadFileIfExists(path) != text) {
    MakeOwnedDir(SsHome(), 0700);
    AtomicWrite(path, text, 0755);
  }
  return path;
}

}  // namespace ss
