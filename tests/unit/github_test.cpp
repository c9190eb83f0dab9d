#include "github.hpp"

#include <gtest/gtest.h>

#include <map>

#include "error.hpp"
#include "strings.hpp"

namespace ss {
namespace {

// Answers gh commands from a table and records what ran.
class FakeRunner : public ProjectRunner {
 public:
  bool has_gh = true;
  std::map<std::string, ProcessResult> answers;  // by argv joined with spaces
  std::vector<std::string> ran;

  bool Has(std::string_view program) override { return program == "gh" && has_gh; }
  ProcessResult Run(const std::vector<std::string>& argv) override {
    std::string line = Join(argv, " ");
    ran.push_back(line);
    auto it = answers.find(line);
    if (it != answers.end()) return it->second;
    return ProcessResult{0, false, "", ""};
  }
  std::string Where() const override { return "in the test"; }
};

ProcessResult Fail(int status, std::string err) { return ProcessResult{status, false, "", err}; }

TEST(GitHub, CreatesAndReportsTheRepository) {
  FakeRunner r;
  r.answers["gh repo view --json nameWithOwner,url"] = ProcessResult{
      0, false, R"({"nameWithOwner":"octo/my-api","url":"https://github.com/octo/my-api"})", ""};
  GitHubRepo repo = CreateGitHubRepo(r, "my-api", false);
  EXPECT_EQ(repo.name_with_owner, "octo/my-api");
  EXPECT_EQ(repo.url, "https://github.com/octo/my-api");
  EXPECT_EQ(r.ran, (std::vector<std::string>{
                       "gh auth status",
                       "gh repo create my-api --source=. --remote=origin --public --push",
                       "gh repo view --json nameWithOwner,url"}));
}

TEST(GitHub, PrivateRepositories) {
  EXPECT_EQ(Join(GhRepoCreateArgv("x1", true), " "),
            "gh repo create x1 --source=. --remote=origin --private --push");
  EXPECT_EQ(Join(GhRepoCreateArgv("x1", false), " "),
            "gh repo create x1 --source=. --remote=origin --public --push");
}

TEST(GitHub, MissingGh) {
  FakeRunner r;
  r.has_gh = false;
  try {
    CreateGitHubRepo(r, "x1", false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitUnavailable);
    EXPECT_STREQ(e.what(), "gh not found in the test: install the GitHub CLI");
  }
  EXPECT_TRUE(r.ran.empty());
}

TEST(GitHub, NotLoggedIn) {
  FakeRunner r;
  r.answers["gh auth status"] = Fail(1, "You are not logged into any GitHub hosts.\n");
  try {
    CreateGitHubRepo(r, "x1", false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitUnavailable);
    EXPECT_STREQ(e.what(), "gh not authenticated: run 'gh auth login'");
    EXPECT_EQ(e.details(), std::vector<std::string>{"  You are not logged into any GitHub hosts."});
  }
  EXPECT_EQ(r.ran, std::vector<std::string>{"gh auth status"});
}

TEST(GitHub, GitHubRefuses) {
  FakeRunner r;
  r.answers["gh repo create x1 --source=. --remote=origin --public --push"] =
      Fail(1, "GraphQL: Name already exists on this account (createRepository)\n");
  try {
    CreateGitHubRepo(r, "x1", false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitFailure);
    EXPECT_STREQ(e.what(), "gh repo create failed (exit status 1)");
    EXPECT_EQ(e.details(),
              std::vector<std::string>{
                  "  GraphQL: Name already exists on this account (createRepository)"});
  }
}

TEST(GitHub, AnUnreadableAnswerIsAnError) {
  FakeRunner r;
  r.answers["gh repo view --json nameWithOwner,url"] = ProcessResult{0, false, "not json", ""};
  try {
    CreateGitHubRepo(r, "x1", false);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), kExitFailure);
  }
}

TEST(GitHub, HostRunnerRunsInTheFolder) {
  HostRunner r("/");
  EXPECT_TRUE(r.Has("sh"));
  EXPECT_FALSE(r.Has("no-such-program-here"));
  EXPECT_EQ(r.Run({"pwd"}).out, "/\n");
  EXPECT_EQ(r.Where(), "on the host");
}

}  // namespace
}  // namespace ss
