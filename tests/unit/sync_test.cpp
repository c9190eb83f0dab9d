// The pure parts of working copies and file transfer: rsync's itemized output, which changes of
// the copy a sync would lose, the find(1) arguments that skip excluded paths, diff stats, the
// exclusion file (one list for ss sync, provisioning and the sandbox's shell), remote paths,
// and the health-check report.
#include "sync.hpp"

#include <gtest/gtest.h>
#include <yaml-cpp/yaml.h>

#include "config.hpp"
#include "error.hpp"
#include "git_layer.hpp"
#include "health.hpp"
#include "provision.hpp"
#include "strings.hpp"
#include "transfer.hpp"
#include "working_copy.hpp"

namespace ss {
namespace {

TEST(Itemized, ParsesRsyncOutFormat) {
  auto c = ParseItemized(
      "*deleting   only/o\n*deleting   only/\n>f+++++++++ a b.txt\n>f.st...... d/b\n"
      "cL+++++++++ l\ncd+++++++++ newdir/\n.d..t...... ./\n.f...p..... mode-only\n");
  ASSERT_EQ(c.size(), 7u);
  EXPECT_TRUE(c[0].deleting());
  EXPECT_TRUE(c[0].content());
  EXPECT_EQ(c[0].path, "only/o");
  EXPECT_TRUE(c[1].directory());
  EXPECT_FALSE(c[1].content());
  EXPECT_EQ(c[2].path, "a b.txt");
  EXPECT_TRUE(c[2].created());
  EXPECT_TRUE(c[3].content());
  EXPECT_FALSE(c[3].created());
  EXPECT_TRUE(c[4].content());
  EXPECT_FALSE(c[5].content());
  EXPECT_FALSE(c[6].content());  // only the mode changes: the data stays
  EXPECT_TRUE(c[6].mode());      // but the executable bit is work of its own
  EXPECT_TRUE(c[6].change());
  EXPECT_FALSE(c[2].mode());
  EXPECT_FALSE(c[1].mode());  // a folder's mode is nothing apply brings
}

TEST(Itemized, NamesWithLineBreaksComeBackWhole) {
  // rsync prints unprintable bytes as \#ooo; a fake line inside a name is not a change.
  auto c = ParseItemized(">f+++++++++ a\\#012>f+++++++++ ../x\n>f+++++++++ back\\#134#012\n");
  ASSERT_EQ(c.size(), 2u);
  EXPECT_EQ(c[0].path, "a\n>f+++++++++ ../x");
  EXPECT_EQ(c[1].path, "back\\#012");
}

TEST(Itemized, AtRiskIsWhatChangedInTheCopyAndWouldBeReplaced) {
  auto plan = ParseItemized(
      "*deleting   mine.txt\n*deleting   old.txt\n>f.st...... edited.txt\n>f.st...... theirs.txt\n"
      ">f+++++++++ brand-new.txt\n.f...p..... chmodded.txt\n");
  std::vector<std::string> changed = {"mine.txt", "edited.txt", "chmodded.txt", "untouched.txt"};
  // The copy made chmodded.txt executable; a sync would take the bit back: that is lost work too.
  EXPECT_EQ(AtRisk(plan, changed),
            (std::vector<std::string>{"mine.txt", "edited.txt", "chmodded.txt"}));
  EXPECT_TRUE(AtRisk(plan, {}).empty());
}

TEST(FindPrune, NamePatternsAndDirectoriesOnly) {
  EXPECT_TRUE(FindPruneArgs({}).empty());
  EXPECT_EQ(
      FindPruneArgs({"node_modules", "*.log", "build/"}),
      (std::vector<std::string>{"(", "-name", "node_modules", "-o", "-name", "*.log", "-o", "(",
                                "-type", "d", "-name", "build", ")", ")", "-prune", "-o"}));
  // Anchored, path and rule patterns are left to rsync (nothing pruned: more is looked at).
  EXPECT_TRUE(FindPruneArgs({"/dist", "src/gen", "a/**", "- x", "+ y"}).empty());
}

TEST(DiffStat, CountsPerFileAndInTotal) {
  std::string diff =
      "--- a/x.txt\n+++ b/x.txt\n@@ -1,2 +1,2 @@\n a\n-b\n+B\n+C\n"
      "--- a/new.txt\n+++ b/new.txt\n@@ -0,0 +1 @@\n+fresh\n"
      "Binary files a/img.png and b/img.png differ\n";
  EXPECT_EQ(DiffStat(diff),
            " x.txt   | 3 ++-\n new.txt | 1 +\n img.png | Bin\n"
            " 3 files changed, 3 insertions(+), 1 deletion(-)\n");
}

TEST(DiffStat, AModeChangeIsAFileChangedEvenWithoutLines) {
  std::string diff =
      "mode change 644 => 755 run.sh\n"
      "mode change 755 => 644 both 755 => x\n--- a/both 755 => x\n+++ b/both 755 => x\n"
      "@@ -1 +1 @@\n-a\n+b\n"
      "mode change 644 => 755 bin.dat\nBinary files a/bin.dat and b/bin.dat differ\n";
  EXPECT_EQ(DiffStat(diff),
            " run.sh        | 0\n both 755 => x | 2 +-\n bin.dat       | Bin\n"
            " 3 files changed, 1 insertion(+), 1 deletion(-)\n");
}

TEST(SyncExclude, OneListForEveryone) {
  Config config = Config::Parse("", "config.yaml");
  EXPECT_EQ(SyncExcludes(config),
            (std::vector<std::string>{"node_modules", ".git", "dist", "build"}));
  std::string text = RenderSyncExclude(SyncExcludes(config));
  std::vector<std::string> patterns;
  for (const auto& line : SplitLines(text)) {
    if (!line.empty() && line[0] != '#') patterns.push_back(line);
  }
  EXPECT_EQ(patterns, SyncExcludes(config));
  // Provisioning installs exactly that file.
  ProvisionInput in;
  in.hostname = "box";
  in.sync_exclude = text;
  YAML::Node doc = YAML::Load(RenderUserData(in));
  std::string installed;
  for (const auto& f : doc["write_files"]) {
    if (f["path"].as<std::string>() == kSyncExcludeFile) installed = f["content"].as<std::string>();
  }
  EXPECT_EQ(installed, text);
}

TEST(SyncExclude, ALineBreakInAPatternIsAConfigError) {
  Config config = Config::Parse("sync:\n  exclude: [\"a\\nb\"]\n", "config.yaml");
  try {
    SyncExcludes(config);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitConfig);
  }
}

TEST(WorkingCopy, ModeAndPaths) {
  Config config = Config::Parse("projects:\n  my-app:\n    mode: copy\n", "config.yaml");
  EXPECT_TRUE(IsCopyMode(config, "my-app"));
  EXPECT_FALSE(IsCopyMode(config, "other"));
  EXPECT_EQ(SourceDir("my-app"), "/home/sandbox/project-src/my-app");
  EXPECT_EQ(CopyDir("my-app"), "/home/sandbox/copy-projects/my-app");
  EXPECT_EQ(SourceStamp("my-app"), "/home/sandbox/.ss/sources/my-app.stamp");
  EXPECT_THROW(Config::Parse("projects:\n  my-app:\n    mode: clone\n", "config.yaml"), Error);
}

TEST(GitLayer, OneLinePerBranchWithCommitsTheHostLacked) {
  FetchReport r;
  r.repository = true;
  FetchedBranch ff{
      "main", FetchedBranch::Outcome::kFastForwarded, "1a2b3c4d5e6f", "5d6e7f8a9b0c", 3, ""};
  FetchedBranch added{"feature", FetchedBranch::Outcome::kNew, "", "abc", 1, ""};
  FetchedBranch kept{"dev\x1b[2J", FetchedBranch::Outcome::kKept, "a", "b", 2, "why"};
  // A name the sandbox chose is shown as a shell reads it back: pasted, it runs nothing.
  FetchedBranch hostile{"x$(touch${IFS}/tmp/p)", FetchedBranch::Outcome::kNew, "", "c", 1, ""};
  r.branches = {ff, added, kept, hostile};
  EXPECT_EQ(
      FetchLines(r),
      (std::vector<std::string>{
          "main: fast-forwarded by 3 commits (1a2b3c4..5d6e7f8)",
          "feature: new in the sandbox, 1 commit: sandbox/feature",
          "dev^[[2J: 2 commits left in 'sandbox/dev^[[2J': why",
          "x$(touch${IFS}/tmp/p): new in the sandbox, 1 commit: 'sandbox/x$(touch${IFS}/tmp/p)'"}));
  EXPECT_TRUE(FetchLines(FetchReport{}).empty());
}

TEST(Transfer, RemotePaths) {
  EXPECT_EQ(RemotePath("/etc/x", "/home/sandbox/projects/a"), "/etc/x");
  EXPECT_EQ(RemotePath("data/x", "/home/sandbox/projects/a"), "/home/sandbox/projects/a/data/x");
  EXPECT_EQ(RemotePath("./x", "/home/sandbox"), "/home/sandbox/x");
  EXPECT_EQ(RemotePath(".", "/home/sandbox"), "/home/sandbox");
}

TEST(Health, LinesJsonAndStatus) {
  std::vector<CheckResult> checks = {{"ssh", CheckStatus::kOk, "sandbox@10.0.0.2:22", ""},
                                     {"docker", CheckStatus::kFailed, "no daemon", "start it"}};
  EXPECT_TRUE(AnyFailed(checks));
  EXPECT_EQ(FormatChecks(checks),
            "ssh     ok       sandbox@10.0.0.2:22\n"
            "docker  FAILED   no daemon\n"
            "                 fix: start it\n");
  Json j = ChecksJson(checks);
  EXPECT_EQ(j[1]["status"], "failed");
  EXPECT_EQ(j[1]["ok"], false);
  EXPECT_TRUE(j[0]["fix"].is_null());
  checks.pop_back();
  EXPECT_FALSE(AnyFailed(checks));
}

}  // namespace
}  // namespace ss
