// Updates: `ss update`, and the check on launch.
//
// The release feed (updates.feed in config.yaml) is a directory served over HTTP(S):
//
//   FEED/latest                          the newest version, one line: "1.3.0"
//   FEED/VERSION/checksums.txt           sha256sum(1) lines: "<hex>  <file name>"
//   FEED/VERSION/ss-linux-x86_64.tar.gz  bin/ss and libexec/ss/ss-* (ss-linux-<machine>)
//
// A release is downloaded and checked against checksums.txt into a staging directory, its `ss`
// must answer --version with the version the feed named, and only then are the installed
// binaries replaced: every new file is written beside its target first and renamed over it
// last, so a bad checksum, a truncated download or a failed write leaves the old version whole.
//
// On launch (`ss PROJECT`, bare `ss`) nothing is fetched in the foreground: at most once a day a
// detached `ss-update --background` stages the newest release; the next launch installs it
// (updates.auto_apply) or says it is there.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ss {

struct SemVer {
  int major = 0;
  int minor = 0;
  int patch = 0;
  std::string pre;  // "rc.1" of "1.3.0-rc.1": sorts before "1.3.0"
};

// "1.3.0", "v1.3.0", "1.3.0-rc.1" (build metadata after '+' is ignored); nullopt otherwise.
std::optional<SemVer> ParseSemVer(std::string_view text);
// <0, 0, >0 as a is older than, the same as, newer than b (semver precedence).
int CompareSemVer(const SemVer& a, const SemVer& b);

// "ss-linux-x86_64.tar.gz": the archive of this machine's build.
std::string ReleaseArchiveName();

struct Release {
  std::string version;
  std::string archive_url;
  std::string checksums_url;
};

// Reads FEED/latest. Throws ss::Error(69) when the feed cannot be reached, 65 when it does not
// hold a version.
Release FetchLatestRelease(const std::string& feed);

// The expected digest of `file` in checksums.txt text; nullopt when it is not listed.
std::optional<std::string> ChecksumFor(std::string_view checksums, std::string_view file);

// Downloads `r` and unpacks it into `dir` (which must not exist), checking its checksum, its
// contents (only bin/ss and libexec/ss/ss-*, regular files) and that its ss runs and reports
// r.version. Throws ss::Error (65 bad release, 69 unreachable); leaves no `dir` behind on error.
void StageRelease(const Release& r, const std::string& dir);

// The staged files, as paths relative to the install prefix ("bin/ss", "libexec/ss/ss-vm").
std::vector<std::string> StagedFiles(const std::string& dir);

// Replaces the installed binaries under `prefix` by the staged ones in `dir`. Every new file is
// written (and synced) beside its target before the first rename; on any failure the written
// ones are removed and the installed version is untouched.
void InstallStaged(const std::string& dir, const std::string& prefix);

// The install's prefix, from where the running binary is (PREFIX/bin or PREFIX/libexec/ss).
std::string InstallPrefix();

// $SS_HOME/.ss/update: staged/ (a release ready to install), last-check, lock, log.
std::string UpdateDir();

// Called by the dispatcher before opening a project or the menu: installs a staged release
// (updates.auto_apply) or tells about it, and starts the daily background check when it is due.
// Never fetches in the foreground, never throws.
void UpdateOnLaunch(const std::string& ss_update_path);

}  // namespace ss
