// Checks, component by component: `ss health-check` looks inside a sandbox, `ss doctor` at the
// host. Each check is ok, or failed with the reason; the tools print one line each and exit
// non-zero when any failed.
#pragma once

#include <string>
#include <vector>

#include "json_out.hpp"
#include "platform.hpp"

namespace ss {

class Config;
class Sandbox;

enum class CheckStatus { kOk, kWarning, kFailed };
const char* CheckStatusName(CheckStatus status);  // "ok", "warning", "FAILED"

struct CheckResult {
  std::string name;  // "network", "docker", ...
  CheckStatus status = CheckStatus::kOk;
  std::string detail;  // what was found, or why it failed
  std::string fix;     // how to fix it, when it failed
};

bool AnyFailed(const std::vector<CheckResult>& checks);
// One line per check: "network          ok        deb.debian.org answers".
std::string FormatChecks(const std::vector<CheckResult>& checks);
Json ChecksJson(const std::vector<CheckResult>& checks);

// In this order: ssh, network, docker, claude, project directory, source mount, browser bridge.
// Without SSH the others cannot be looked at: they fail with that reason.
std::vector<CheckResult> HealthCheck(Sandbox& sandbox, const Config& config);

// On macOS, what Lume and Lima need of the Mac: macOS 13 or later, Apple Silicon (Lume alone;
// a warning), Virtualization.framework able to run machines. Nothing elsewhere.
std::vector<CheckResult> MacChecks(const platform::MacHost& mac);

// Virtualization, the Mac's checks (above), each backend's CheckHost(), disk space, Claude Code and
// Chrome on the host, the browser bridge socket. Backends that cannot run are warnings, unless none
// can.
std::vector<CheckResult> Doctor(const Config& config);

}  // namespace ss
